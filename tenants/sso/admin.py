from django.contrib import admin, messages
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from tenants.sso import sessions
from tenants.sso.models import OidcIdentity, SignInSession


@admin.register(OidcIdentity)
class OidcIdentityAdmin(admin.ModelAdmin):
    """Who signs in as whom. Adding one links an existing portal account to a person's identity at the provider
    (their issuer and subject); deleting one unlinks it: that person's next sign-in makes a new user."""

    list_display = ["user", "subject", "issuer", "email", "email_verified", "created_at", "last_login"]
    list_filter = ["issuer", "email_verified"]
    search_fields = ["user__username", "subject", "email"]
    list_select_related = ["user"]
    autocomplete_fields = ["user"]

    def get_readonly_fields(self, request, obj=None):
        # Issuer and subject are the identity: a link is replaced, never edited to point at someone else.
        fixed = ["email", "email_verified", "last_login"]
        return ["issuer", "subject", "created_at", *fixed] if obj else fixed


@admin.register(SignInSession)
class SignInSessionAdmin(admin.ModelAdmin):
    """The sessions people are signed in to: ending one signs that browser out at its next request."""

    list_display = ["user", "provider", "sid", "created_at"]
    list_filter = ["provider"]
    search_fields = ["user__username", "sid"]
    list_select_related = ["user"]
    readonly_fields = ["user", "session_key", "provider", "sid", "created_at"]
    actions = ["end_sessions"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # deleting the row would leave the session running: "End" ends both

    @admin.action(description=_("End the selected sessions (signs those browsers out)"))
    def end_sessions(self, request, queryset):
        ended = sessions.end(queryset)
        self.message_user(
            request,
            ngettext("%(n)d session ended.", "%(n)d sessions ended.", ended) % {"n": ended},
            messages.SUCCESS,
        )
