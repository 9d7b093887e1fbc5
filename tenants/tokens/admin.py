from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from tenants.tokens import services
from tenants.tokens.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Read-only: keys are made by their users (page or API); staff may only revoke."""

    list_display = ["name", "user", "prefix", "state", "created_at", "created_via", "expires_at", "last_used_at"]
    list_filter = ["created_via", "revoked_at"]
    search_fields = ["name", "prefix", "user__username"]
    readonly_fields = [f.name for f in ApiToken._meta.fields if f.name != "digest"]
    exclude = ["digest"]
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # a revoked token stays as the record of who made it and who revoked it

    def has_revoke_permission(self, request) -> bool:
        return request.user.has_perm("tenants.delete_apitoken")

    @admin.action(description=_("Revoke the selected tokens"), permissions=["revoke"])
    def revoke(self, request, queryset):
        for token in queryset.select_related("user"):
            services.revoke_token(token=token, by=request.user)
