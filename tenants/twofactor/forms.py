from django import forms
from django.utils.translation import gettext_lazy as _


class CodeForm(forms.Form):
    code = forms.CharField(
        label=_("Code"),
        max_length=32,
        widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "autofocus": True, "size": 12}),
    )


class AppCodeForm(CodeForm):
    """The six digits the authenticator app shows."""

    code = forms.RegexField(
        label=_("Code from the app"),
        regex=r"^\s*\d{6}\s*$",
        error_messages={"invalid": _("Enter the six digits the app shows.")},
        widget=forms.TextInput(
            attrs={"autocomplete": "one-time-code", "inputmode": "numeric", "autofocus": True, "size": 8}
        ),
    )
