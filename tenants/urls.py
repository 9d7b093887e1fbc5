from django.urls import path

from tenants import views

urlpatterns = [
    path("", views.home, name="home"),
    path("program/", views.program_overview, name="program-overview"),
    path("program/capacity/review/", views.review_queue, name="review-queue"),
    path("program/capacity/requests/<int:pk>/decide/", views.decide, name="capacity-decide"),
    path("program/capacity/pools/<int:pk>/", views.pool_timeline, name="pool-timeline"),
    path("program/capacity/allocations/", views.allocations, name="allocations"),
    path("program/capacity/allocations/<int:pk>/revoke/", views.revoke, name="allocation-revoke-page"),
    path("program/audit/", views.audit_log, name="audit-log"),
    path("orgs/<slug:org_slug>/", views.org_home, name="org-home"),
    path("orgs/<slug:org_slug>/capacity/", views.capacity, name="capacity"),
    path("orgs/<slug:org_slug>/capacity/new/", views.capacity_request_new, name="capacity-request-new"),
    path("orgs/<slug:org_slug>/capacity/estimate/", views.capacity_estimate, name="capacity-estimate"),
    path("orgs/<slug:org_slug>/capacity/requests/<int:pk>/", views.capacity_request_detail, name="capacity-request"),
    path(
        "orgs/<slug:org_slug>/capacity/requests/<int:pk>/edit/",
        views.capacity_request_edit,
        name="capacity-request-edit",
    ),
    path(
        "orgs/<slug:org_slug>/capacity/requests/<int:pk>/submit/",
        views.capacity_request_action,
        {"action": "submit"},
        name="capacity-request-submit",
    ),
    path(
        "orgs/<slug:org_slug>/capacity/requests/<int:pk>/withdraw/",
        views.capacity_request_action,
        {"action": "withdraw"},
        name="capacity-request-withdraw",
    ),
]
