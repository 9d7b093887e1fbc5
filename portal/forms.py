"""Form pieces every app's forms use."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError


class DateInput(forms.DateInput):
    input_type = "date"


def apply_errors(form: forms.Form, error: ValidationError, aliases: dict[str, str | None] | None = None) -> None:
    """Show a service's ValidationError on the form: on the field it names (or the form field that stands for
    that model field, per `aliases`), else at the top of the form."""
    aliases = aliases or {}
    if not hasattr(error, "error_dict"):
        form.add_error(None, error)
        return
    for name, messages in error.message_dict.items():
        target = aliases.get(name, name)
        form.add_error(target if target in form.fields else None, messages)
