"""Capacity pages: a tenant's requests under /orgs/<slug>/capacity/, the program's queue, pools and allocations
under /program/capacity/. URL names are unchanged from before the capacity sub-package existed."""

from django.urls import path

from tenants.capacity import staff_views, views
from tenants.capacity.planning import views as plan_views

urlpatterns = [
    path("program/capacity/review/", staff_views.review_queue, name="review-queue"),
    path("program/capacity/requests/<int:pk>/decide/", staff_views.decide, name="capacity-decide"),
    path("program/capacity/plans/", plan_views.capacity_plans, name="capacity-plans"),
    path("program/capacity/plans/<int:pk>/", plan_views.capacity_plan, name="capacity-plan-page"),
    path("program/capacity/plans/<int:pk>/apply/", plan_views.capacity_plan_apply, name="capacity-plan-apply-page"),
    path("program/capacity/pools/<int:pk>/", staff_views.pool_timeline, name="pool-timeline"),
    path("program/capacity/allocations/", staff_views.allocations, name="allocations"),
    path("program/capacity/allocations/<int:pk>/revoke/", staff_views.revoke, name="allocation-revoke-page"),
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
