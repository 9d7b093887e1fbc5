from django.urls import path

from tenants import views

urlpatterns = [
    path("", views.home, name="home"),
    path("program/", views.program_overview, name="program-overview"),
    path("orgs/<slug:org_slug>/", views.org_home, name="org-home"),
]
