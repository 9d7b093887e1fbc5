from django.urls import path

from workloads.support import views

app_name = "support"

urlpatterns = [
    path("support/", views.case_list, name="list"),
    path("support/<int:pk>/", views.case_detail, name="detail"),
    path("support/<int:pk>/comment/", views.case_comment, name="comment"),
    path("support/<int:pk>/update/", views.case_update, name="update"),
    path("orgs/<slug:org_slug>/support/new/", views.case_create, name="create"),
]
