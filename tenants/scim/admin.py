from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from tenants.scim import tokens
from tenants.scim.models import ScimGroup, ScimToken, ScimUser
from tenants.tokens.admin import KeyAdmin


@admin.register(ScimToken)
class ScimTokenAdmin(KeyAdmin):
    """Tokens are made with `manage.py scim_token create` (the key is printed once)."""

    list_display = ["name", "prefix", "state", "created_at", "created_by", "expires_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["name", "prefix"]

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
