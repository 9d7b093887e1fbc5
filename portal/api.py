"""API plumbing shared by every app: errors are JSON with field messages, never an HTML 500."""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.translation import gettext as _
from rest_framework import exceptions
from rest_framework.parsers import JSONParser
from rest_framework.views import exception_handler as drf_exception_handler


class ObjectJSONParser(JSONParser):
    """Every write takes a JSON object: `0`, `null`, `false` or a list is a 400, not a crash further in."""

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        if not isinstance(data, dict):
            raise exceptions.ParseError(
                _('Send a JSON object ({"field": value, …}), not %(kind)s.')
                % {"kind": type(data).__name__ if data is not None else "null"}
            )
        return data


def exception_handler(exc, context):
    # Services raise Django's ValidationError; the API answers it as a 400 with the same messages.
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            exc = exceptions.ValidationError(exc.message_dict)
        else:
            exc = exceptions.ValidationError({"non_field_errors": exc.messages})
    return drf_exception_handler(exc, context)
