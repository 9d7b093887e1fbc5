from django.urls import path

from workloads.program import views

# No namespace: "program-overview" is where staff land (tenants.views.home) and the top bar's first link.
urlpatterns = [
    path("program/", views.program_overview, name="program-overview"),
    path("orgs/<slug:org_slug>/", views.org_home, name="org-home"),
]
