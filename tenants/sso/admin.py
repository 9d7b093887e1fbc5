from django.contrib import admin

from tenants.sso.models import OidcIdentity


@admin.register(OidcIdentity)
class OidcIdentityAdmin(admin.ModelAdmin):
    """Who signs in as whom. Adding one links an existing portal account to a person's identity at the provider
    (their issuer and subject); deleting one unlinks it: that person's next sign-in makes a new user."""

    list_display = ["user", "subject", "issuer", "email", "created_at", "last_login"]
    list_filter = ["issuer"]
    search_fields = ["user__username", "subject", "email"]
    list_select_related = ["user"]
    autocomplete_fields = ["user"]

    def get_readonly_fields(self, request, obj=None):
        # Issuer and subject are the identity: a link is replaced, never edited to point at someone else.
        return ["issuer", "subject", "email", "created_at", "last_login"] if obj else ["email", "last_login"]
