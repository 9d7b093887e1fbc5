"""The API's one rule for what a write may contain (README, API): a field the serializer does not know is a 400
naming it (a typo never passes silently); a read-only field is a 400 naming it too, unless it repeats the value
the object already has (so a client may send back what it read). Query-string serializers are exempt: a query
carries paging, ordering and format parameters beside the filters."""

from __future__ import annotations

from collections.abc import Mapping

from django.utils import translation
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

IGNORED = {"csrfmiddlewaretoken", "_method", "_content_type", "_content"}  # the browsable API's form fields
UNKNOWN = _("Unknown field: this endpoint does not take it.")
READ_ONLY = _("This field is read-only: it cannot be set here.")


class WriteRules:
    read_only_messages: dict = {}  # field → what to say instead of READ_ONLY (e.g. how the field does change)

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            errors = self.refused_fields(data)
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)

    def refused_fields(self, data: Mapping) -> dict:
        errors = {}
        current = None
        for name in data:
            if name in IGNORED:
                continue
            field = self.fields.get(name)
            if field is None:
                errors[name] = [UNKNOWN]
            elif field.read_only:
                if self.instance is not None and not isinstance(self.instance, list | tuple):
                    current = current if current is not None else self.to_representation(self.instance)
                    if current.get(name) == data[name]:
                        continue
                errors[name] = [self.read_only_messages.get(name, READ_ONLY)]
        return errors


class Serializer(WriteRules, serializers.Serializer):
    pass


class ModelSerializer(WriteRules, serializers.ModelSerializer):
    """A field without a help text gets one where a general sentence is true of every model (the OpenAPI schema
    describes every field: tests/test_api_schema.py); every other field says what it is itself, in its serializer
    (help_text=, or Meta.extra_kwargs for a field built from the model), never on the model."""

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        with translation.override(None):  # help texts are plain English, whatever the request's language
            noun = str(self.Meta.model._meta.verbose_name)
        defaults = {
            "id": f"Id of the {noun}.",
            "created_at": f"When the {noun} was created.",
            "updated_at": f"When the {noun} last changed.",
            "organization": f"Slug of the organization the {noun} belongs to.",
        }
        for name, field in fields.items():
            if not field.help_text and name in defaults:
                field.help_text = defaults[name]
        return fields


class SlugRelatedField(serializers.SlugRelatedField):
    """A related object named by a slug or username. A value the database cannot hold (a NUL character, an
    over-long string) is "no such object", not a database error: PostgreSQL refuses NUL in text outright."""

    default_error_messages = {"does_not_exist": _("No such object: {slug_name}={value}.")}

    def __init__(self, slug_field: str | None = None, **kwargs) -> None:
        # Without its own help text, a username field shows User.username's ("Required. 150 characters or
        # fewer…"), which describes the user form, not whose username this is.
        if slug_field == "username" and not kwargs.get("help_text"):
            raise TypeError("A username field says whose username it is: help_text='Username of the person who …'")
        super().__init__(slug_field=slug_field, **kwargs)

    def to_internal_value(self, data):
        if isinstance(data, str) and ("\x00" in data or len(data) > 255):
            self.fail("does_not_exist", slug_name=self.slug_field, value=data[:40])
        return super().to_internal_value(data)
