from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from tenants.tokens import services
from tenants.tokens.models import ApiToken


class KeyAdmin(admin.ModelAdmin):
    """A hashed key's rows (tenants.tokens.keys), read-only, never the digest: keys are made elsewhere (a page, the
    API, a command) and staff may only revoke them, with the subclass's `revoke` action; a revoked key stays as the
    record of who made it and who revoked it."""

    exclude = ["digest"]
    actions = ["revoke"]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields if f.name != "digest"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def has_revoke_permission(self, request) -> bool:
        return request.user.has_perm(f"tenants.delete_{self.model._meta.model_name}")


@admin.register(ApiToken)
class ApiTokenAdmin(KeyAdmin):
    """Keys are made by their users (page or API)."""

    list_display = ["name", "user", "prefix", "state", "created_at", "created_via", "expires_at", "last_used_at"]
    list_filter = ["created_via", "revoked_at"]
    search_fields = ["name", "prefix", "user__username"]

    @admin.action(description=_("Revoke the selected tokens"), permissions=["revoke"])
    def revoke(self, request, queryset):
        for token in queryset.select_related("user"):
            services.revoke_token(token=token, by=request.user)
