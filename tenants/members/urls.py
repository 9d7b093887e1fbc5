from django.urls import path

from tenants.members import views

app_name = "members"

urlpatterns = [
    path("orgs/<slug:org_slug>/members/", views.member_list, name="list"),
    path("orgs/<slug:org_slug>/members/invite/", views.member_invite, name="invite"),
    path("orgs/<slug:org_slug>/members/<int:pk>/role/", views.member_role, name="role"),
    path("orgs/<slug:org_slug>/members/<int:pk>/remove/", views.member_remove, name="remove"),
    path("orgs/<slug:org_slug>/invitations/<int:pk>/revoke/", views.invitation_revoke, name="revoke"),
]
