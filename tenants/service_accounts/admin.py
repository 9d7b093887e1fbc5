from django.contrib import admin

from tenants.service_accounts.models import ServiceAccount


@admin.register(ServiceAccount)
class ServiceAccountAdmin(admin.ModelAdmin):
    """Read-only: accounts are made, changed and disabled on the organization's Service accounts page or through the
    API (tenants.service_accounts.services), which keep the role member or viewer and record every change."""

    list_display = ["name", "organization", "user", "created_by", "created_at", "disabled_at"]
    list_filter = ["organization"]
    search_fields = ["name", "user__username", "organization__slug"]
    readonly_fields = [f.name for f in ServiceAccount._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # disabled, never deleted: the record stays
