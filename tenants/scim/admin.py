from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from tenants.scim import tokens
from tenants.scim.models import ScimGroup, ScimToken, ScimUser


@admin.register(ScimToken)
class ScimTokenAdmin(admin.ModelAdmin):
    """Read-only: tokens are made with `manage.py scim_token create` (the key is printed once); staff may revoke."""

    list_display = ["name", "prefix", "state", "created_at", "created_by", "expires_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["name", "prefix"]
    readonly_fields = [f.name for f in ScimToken._meta.fields if f.name != "digest"]
    exclude = ["digest"]
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # a revoked token stays as the record of who made it and who revoked it

    def has_revoke_permission(self, request) -> bool:
        return request.user.has_perm("tenants.delete_scimtoken")

    @admin.action(description=_("Revoke the selected SCIM tokens"), permissions=["revoke"])
    def revoke(self, request, queryset):
        for token in queryset:
            tokens.revoke_token(token=token, by=request.user)


class ReadOnly(admin.ModelAdmin):
    """What the SCIM client provisioned, to look at: changes go through the client (or the user's own page)."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ScimUser)
class ScimUserAdmin(ReadOnly):
    list_display = ["user", "scim_id", "external_id", "updated_at"]
    search_fields = ["user__username", "external_id", "scim_id"]
    list_select_related = ["user"]


@admin.register(ScimGroup)
class ScimGroupAdmin(ReadOnly):
    list_display = ["display_name", "scim_id", "external_id", "updated_at"]
    search_fields = ["display_name", "external_id"]
