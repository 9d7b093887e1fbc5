from django import forms
from django.utils.translation import gettext_lazy as _

from tenants.service_accounts.models import DESCRIPTION_MAX, NAME_MAX
from tenants.service_accounts.services import ROLES

# The role is a plain value the service checks (tenants.service_accounts.services.clean_role), so a posted "admin"
# is refused with the reason, not with "Select a valid choice".
ROLE_CHOICES = list(ROLES.items())


class ServiceAccountForm(forms.Form):
    name = forms.CharField(
        label=_("Name"),
        max_length=NAME_MAX,
        help_text=_("Letters, digits and hyphens, e.g. nightly-eval. Its username is svc-<organization>-<name>."),
    )
    role = forms.CharField(
        label=_("Role"),
        max_length=16,
        initial="member",
        widget=forms.Select(choices=ROLE_CHOICES),
        help_text=_("Member: submits requests and records like a member. Viewer: reads only. Never admin."),
    )
    description = forms.CharField(
        label=_("Description"),
        max_length=DESCRIPTION_MAX,
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("What uses it, and who to ask about it."),
    )


class ServiceAccountChangeForm(forms.Form):
    role = forms.CharField(label=_("Role"), max_length=16, widget=forms.Select(choices=ROLE_CHOICES))
    description = forms.CharField(
        label=_("Description"), max_length=DESCRIPTION_MAX, required=False, widget=forms.Textarea(attrs={"rows": 2})
    )
