from django.urls import path

from tenants.service_accounts import views

app_name = "service_accounts"

urlpatterns = [
    path("orgs/<slug:org_slug>/service-accounts/", views.account_list, name="list"),
    path("orgs/<slug:org_slug>/service-accounts/new/", views.account_create, name="create"),
    path("orgs/<slug:org_slug>/service-accounts/<int:pk>/", views.account_detail, name="detail"),
    path("orgs/<slug:org_slug>/service-accounts/<int:pk>/change/", views.account_change, name="change"),
    path("orgs/<slug:org_slug>/service-accounts/<int:pk>/tokens/", views.token_create, name="token-create"),
    path("orgs/<slug:org_slug>/service-accounts/<int:pk>/tokens/revoke/", views.token_revoke, name="token-revoke"),
    path("orgs/<slug:org_slug>/service-accounts/<int:pk>/disable/", views.account_disable, name="disable"),
    path("orgs/<slug:org_slug>/service-accounts/<int:pk>/enable/", views.account_enable, name="enable"),
]
