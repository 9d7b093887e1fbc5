from django.urls import path

from workloads.clusters import views

app_name = "clusters"

urlpatterns = [
    path("clusters/", views.cluster_list, name="list"),
    path("clusters/<int:pk>/", views.cluster_detail, name="detail"),
    path("clusters/<int:pk>/delete/", views.cluster_delete, name="delete"),
    path("clusters/<int:pk>/retry/", views.cluster_retry, name="retry"),
    path("orgs/<slug:org_slug>/clusters/new/", views.cluster_create, name="create"),
]
