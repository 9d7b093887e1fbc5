from django.urls import include, path

from tenants import views

urlpatterns = [
    path("", views.home, name="home"),
    path("program/organizations/", views.program_organizations, name="program-organizations"),
    path("program/audit/", views.audit_log, name="audit-log"),
    path("organizations/suggest/", views.organization_suggestions, name="organization-suggestions"),
    path("", include("tenants.capacity.urls")),
]
