from django.urls import path

from workloads.usage import views

app_name = "usage"

urlpatterns = [
    path("program/usage/", views.program_usage, name="program"),
    path("program/usage/export.csv", views.program_usage_export, name="program-export"),
    path("program/usage/rates/", views.rate_card, name="rates"),
    path("orgs/<slug:org_slug>/usage/", views.org_usage, name="org"),
    path("orgs/<slug:org_slug>/usage/export.csv", views.org_usage_export, name="org-export"),
]
