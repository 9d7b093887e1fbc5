from django.urls import path

from workloads.records import views

app_name = "records"

urlpatterns = [
    path("workloads/", views.workload_tracking, name="tracking"),
    path("workloads/export.csv", views.workload_export, name="export"),
    path("workloads/print/", views.workload_print, name="print"),
    path("workloads/<int:pk>/", views.workload_detail, name="detail"),
    path("workloads/<int:pk>/edit/", views.workload_edit, name="edit"),
    path("orgs/<slug:org_slug>/workloads/new/", views.workload_create, name="create"),
]
