from django.contrib import admin

from tenants.sso.models import OidcIdentity


@admin.register(OidcIdentity)
class OidcIdentityAdmin(admin.ModelAdmin):
    """Who signs in as whom. Deleting one unlinks the account: that person's next sign-in makes a new user."""

    list_display = ["user", "subject", "issuer", "email", "created_at", "last_login"]
    list_filter = ["issuer"]
    search_fields = ["user__username", "subject", "email"]
    list_select_related = ["user"]
    readonly_fields = ["issuer", "subject", "email", "created_at", "last_login"]

    def has_add_permission(self, request) -> bool:
        return False  # identities come from sign-ins
