"""API plumbing shared by every app: errors are JSON with field messages, never an HTML 500 (the parser that takes
only JSON objects is portal.parsers: DRF's settings import it while rest_framework.views loads, so it must not
import that module itself)."""

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
    # Services raise Django's ValidationError; the API answers it as a 400 with the same messages.
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            exc = exceptions.ValidationError(exc.message_dict)
        else:
            exc = exceptions.ValidationError({"non_field_errors": exc.messages})
    return drf_exception_handler(exc, context)
