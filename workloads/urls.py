from django.urls import path

from workloads import cluster_views, views

app_name = "workloads"

urlpatterns = [
    path("workloads/", views.workload_tracking, name="workload-tracking"),
    path("workloads/export.csv", views.workload_export, name="workload-export"),
    path("workloads/print/", views.workload_print, name="workload-print"),
    path("workloads/<int:pk>/", views.workload_detail, name="workload-detail"),
    path("workloads/<int:pk>/edit/", views.workload_edit, name="workload-edit"),
    path("orgs/<slug:org_slug>/workloads/new/", views.workload_create, name="workload-create"),
    path("support/", views.case_list, name="case-list"),
    path("support/<int:pk>/", views.case_detail, name="case-detail"),
    path("support/<int:pk>/comment/", views.case_comment, name="case-comment"),
    path("support/<int:pk>/update/", views.case_update, name="case-update"),
    path("orgs/<slug:org_slug>/support/new/", views.case_create, name="case-create"),
    path("review/", views.review_current, name="review-current"),
    path("review/<str:week>/", views.review_week, name="review-week"),
    path("review/<str:week>/meeting/", views.review_meeting_save, name="review-meeting-save"),
    path("review/<str:week>/action-items/", views.review_action_item_add, name="review-action-item-add"),
    path("review/action-items/<int:pk>/status/", views.review_action_item_status, name="review-action-item-status"),
    path("clusters/", cluster_views.cluster_list, name="cluster-list"),
    path("clusters/<int:pk>/", cluster_views.cluster_detail, name="cluster-detail"),
    path("clusters/<int:pk>/delete/", cluster_views.cluster_delete, name="cluster-delete"),
    path("clusters/<int:pk>/retry/", cluster_views.cluster_retry, name="cluster-retry"),
    path("orgs/<slug:org_slug>/clusters/new/", cluster_views.cluster_create, name="cluster-create"),
]
