"""/scim/v2/… without trailing slashes, as SCIM clients append /Users and /Users/<id> to the base URL they are given."""

from django.urls import path

from tenants.scim import views

urlpatterns = [
    path("scim/v2/ServiceProviderConfig", views.ServiceProviderConfigView.as_view(), name="scim-config"),
    path("scim/v2/ResourceTypes", views.ResourceTypesView.as_view(), name="scim-resource-types"),
    path("scim/v2/ResourceTypes/<str:name>", views.ResourceTypesView.as_view(), name="scim-resource-type"),
    path("scim/v2/Schemas", views.SchemasView.as_view(), name="scim-schemas"),
    path("scim/v2/Schemas/<str:schema_id>", views.SchemasView.as_view(), name="scim-schema"),
    path("scim/v2/.search", views.SearchView.as_view(), name="scim-search"),
    path("scim/v2/<str:collection>/.search", views.SearchView.as_view(), name="scim-collection-search"),
    path("scim/v2/Users", views.UsersView.as_view(), name="scim-users"),
    path("scim/v2/Users/<str:scim_id>", views.UserView.as_view(), name="scim-user"),
    path("scim/v2/Groups", views.GroupsView.as_view(), name="scim-groups"),
    path("scim/v2/Groups/<str:scim_id>", views.GroupView.as_view(), name="scim-group"),
    path("scim/v2/<path:rest>", views.NotFoundView.as_view(), name="scim-not-found"),
]
