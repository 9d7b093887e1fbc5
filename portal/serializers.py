"""The API's one rule for what a write may contain (docs/api.md): a field the serializer does not know is a 400
naming it (a typo never passes silently); a read-only field is a 400 naming it too, unless it repeats the value
the object already has (so a client may send back what it read). Query-string serializers are exempt: a query
carries paging, ordering and format parameters beside the filters.

A value is of the type the schema gives its field, never coerced: a string field takes a JSON string (`"minutes": 0`
is a 400, not the text "0"), a related object's slug or id is not "" (null says none), a boolean `true` or `false`
(in a form or multipart body, the words `true` and `false`, as OpenAPI writes a boolean there: `internal=0` is a
400). A field that is an object or a list of objects cannot be written in a form: given there, it is a 400 naming
it, never silently dropped (DRF reads only `what_if.x` keys)."""

from __future__ import annotations

from collections.abc import Mapping

from django.utils import translation
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers
from rest_framework.utils import html

IGNORED = {"csrfmiddlewaretoken", "_method", "_content_type", "_content"}  # the browsable API's form fields
UNKNOWN = _("Unknown field: this endpoint does not take it.")
READ_ONLY = _("This field is read-only: it cannot be set here.")
STRUCTURE_IN_FORM = _(
    "This field is an object or a list of objects: send the request as JSON (Content-Type: application/json)."
)
FORM_BOOLEANS = {"true": True, "false": False}  # how OpenAPI (and the browsable API's checkbox) writes a boolean


BOTH_NAMES = _("Give %(new)s or its former name %(old)s, not both with different values.")


class WriteRules:
    read_only_messages: dict = {}  # field → what to say instead of READ_ONLY (e.g. how the field does change)
    renamed: dict[str, str] = {}  # a field's former name → its name now (see `renamed` below)

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            data, former = self.under_new_names(data)
            errors = self.refused_fields(data)
            if errors:
                raise serializers.ValidationError(errors)
            try:
                return super().to_internal_value(data)
            except serializers.ValidationError as error:
                # An error is named as the client named the field.
                if isinstance(error.detail, dict):
                    error.detail = {former.get(name, name): detail for name, detail in error.detail.items()}
                raise
        return super().to_internal_value(data)

    def under_new_names(self, data: Mapping) -> tuple[dict | Mapping, dict[str, str]]:
        """A write that uses a field's former name, as if it used the new one; and new → former for the names
        it used, to name its errors back."""
        used = {old: new for old, new in self.renamed.items() if old in data}
        if not used:
            return data, {}
        merged = {name: data[name] for name in data}
        errors, named_by_former = {}, {}
        for old, new in used.items():
            value = merged.pop(old)
            if new not in merged or (self._as_read(new, merged[new]) and not self._as_read(old, value)):
                # Only the former name is given, or it is the one changed while the new one is sent back as read.
                merged[new], named_by_former[new] = value, old
            elif not (self._same_value(new, merged[new], value) or self._as_read(old, value)):
                errors[old] = [BOTH_NAMES % {"new": new, "old": old}]
        if errors:
            raise serializers.ValidationError(errors)
        return merged, named_by_former

    def _same_value(self, name: str, one, other) -> bool:
        """The same value however written: "0.5" and 0.5, "7000000000" and 7000000000."""
        field = self.fields[name]
        try:
            return field.to_internal_value(one) == field.to_internal_value(other)
        except (serializers.ValidationError, TypeError, ValueError):
            return one == other

    def _as_read(self, name: str, value) -> bool:
        """A client sending back what it read: the former name still holds the object's current value."""
        if self.instance is None or isinstance(self.instance, list | tuple):
            return False
        if not hasattr(self, "_as_read_cache"):
            self._as_read_cache = self.to_representation(self.instance)
        return self._as_read_cache.get(name) == value

    def refused_fields(self, data: Mapping) -> dict:
        errors = {}
        current = None
        in_form = html.is_html_input(data)
        for name in data:
            if name in IGNORED:
                continue
            field = self.fields.get(name)
            if field is None:
                errors[name] = [UNKNOWN]
            elif not field.read_only and (mistyped := _mistyped(field, data[name], in_form=in_form)):
                errors[name] = [mistyped]
            elif field.read_only:
                if self.instance is not None and not isinstance(self.instance, list | tuple):
                    current = current if current is not None else self.to_representation(self.instance)
                    if current.get(name) == data[name]:
                        continue
                errors[name] = [self.read_only_messages.get(name, READ_ONLY)]
        return errors


def _mistyped(field: serializers.Field, value, *, in_form: bool) -> str | None:
    """Why a value is not of its field's type (None: it is, or the field checks it itself)."""
    if in_form:
        if isinstance(field, serializers.BaseSerializer | serializers.DictField | serializers.HStoreField):
            return STRUCTURE_IN_FORM
        if isinstance(field, serializers.BooleanField) and value not in FORM_BOOLEANS:
            return field.error_messages["invalid"]
        return None
    if value is None:
        return None  # allow_null decides
    if isinstance(field, serializers.RelatedField) and value == "":
        # DRF reads "" as null for a related field; in JSON, null is how to say none (the schema: at least 1 long).
        return serializers.CharField.default_error_messages["blank"]
    if isinstance(field, serializers.BooleanField) and not isinstance(value, bool):
        return field.error_messages["invalid"]
    if isinstance(field, serializers.CharField) and not isinstance(value, str):
        return field.error_messages["invalid"]
    return None


class Serializer(WriteRules, serializers.Serializer):
    pass


class QuerySerializer(serializers.Serializer):
    """Query-string parameters read by a serializer. A parameter given empty (`?start=`) is a 400 naming it, like any
    value that is not a date, a slug or a choice: the schema's type for it has no empty value. (DRF would take it
    for left out and use the default.)"""

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            blank = [
                name
                for name, field in self.fields.items()
                if name in data and data[name] == "" and not getattr(field, "allow_blank", False)
            ]
            if blank:
                raise serializers.ValidationError(
                    {name: [serializers.CharField.default_error_messages["blank"]] for name in blank}
                )
        return super().to_internal_value(data)


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


def renamed(**former_names: str):
    """A serializer whose fields were renamed for one vocabulary across the API keeps their former names for one
    release: `@renamed(parameters="parameter_count")`, with a field declared under each former name (source: the
    new one) so a read answers both. A write may use either name (both with different values is a 400 naming the
    former), its errors are named as it named the field, and the schema marks the former names deprecated."""

    def decorate(serializer_class):
        serializer_class.renamed = {**serializer_class.renamed, **former_names}
        return extend_schema_serializer(deprecate_fields=list(serializer_class.renamed))(serializer_class)

    return decorate
