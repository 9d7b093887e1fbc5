from django import forms
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from tenants.tokens import services


def expiry_choices() -> list[tuple[int, str]]:
    """The lifetimes offered, said in the reader's language when the form is shown (a `… % {}` on a lazy
    string at import would freeze them in English)."""
    return [
        (days, ngettext("%(days)d day", "%(days)d days", days) % {"days": days}) for days in services.EXPIRY_CHOICES
    ]


class TokenForm(forms.Form):
    name = forms.CharField(
        label=_("Name"),
        max_length=100,
        help_text=_("What it is for, e.g. the script or machine that uses it."),
    )
    expires_in_days = forms.TypedChoiceField(
        label=_("Expires after"),
        coerce=int,
        initial=services.DEFAULT_DAYS,
        choices=expiry_choices,
    )
