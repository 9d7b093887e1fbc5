from django.urls import include, path

from tenants import views

urlpatterns = [
    path("", views.home, name="home"),
    path("program/", views.program_overview, name="program-overview"),
    path("program/audit/", views.audit_log, name="audit-log"),
    path("orgs/<slug:org_slug>/", views.org_home, name="org-home"),
    path("", include("tenants.capacity.urls")),
]
