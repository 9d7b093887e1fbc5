from django import forms
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext_lazy

from tenants.tokens import services


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
        choices=[
            (days, ngettext_lazy("%(days)d day", "%(days)d days", "days") % {"days": days})
            for days in services.EXPIRY_CHOICES
        ],
    )
