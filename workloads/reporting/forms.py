"""The reporter token form of a cluster's Reporter page."""

from django import forms
from django.utils.translation import gettext_lazy as _


class ReporterTokenForm(forms.Form):
    name = forms.CharField(
        label=_("Name"), max_length=100, required=False, help_text=_("Where it is used, e.g. “head node”.")
    )
