"""The OpenAPI schema says everything an operation answers (docs/api.md), by rules every view follows, so a new
endpoint is described by being written like the others (tests/test_api_conformance.py holds the API to it):

- **Errors.** Each operation lists every 4xx it can give, with the body portal.api's exception handler (and
  portal.views' handlers, for errors raised before a view runs) really sends: `FieldErrors` for a 400, `Error`
  (`{"detail": …}`) for the others. Which codes, from what the view is: 400 for a body, filters or a write (services
  refuse states too); 401 where it authenticates; 403 for writes (roles, a session's CSRF token) and views whose
  permissions go beyond "signed in"; 404 for ids and slugs in the path, pages (past the last) and an `organization`
  slug the view resolves; 415 for a body parsed by content type; 429 where throttled. A view adds its own with
  `error_responses = {code: "when"}` (the ingest endpoints: 409, 411, 413), a handler with @errors({code: "when"})
  (or None: a code the rules add that it never answers), or either with @extend_schema(responses=…).
- **Nullability.** A response field read through a nullable model field (or a nullable relation on the way to it)
  may be null, and says so, whatever the serializer field declares.
- **Bodies.** Every write may answer 413 (a body over the limit, portal.parsers); a request object whose serializer
  refuses unknown fields (portal.serializers.WriteRules) says `additionalProperties: false`, and a slug naming
  another object is at least 1 character long ("" is refused, null says none).
- **Bounds.** Ids (path, query, related fields) are 1 to 2⁶³−1; a validator that declares a bound Django's way
  (`code` "min_value"/"max_value" and `limit_value`, like tenants.capacity.estimate.CountInUnits) is a minimum or
  maximum; a slug naming another object is at most as long as that object's field.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from drf_spectacular import openapi
from drf_spectacular.plumbing import ResolvedComponent, append_meta
from rest_framework import permissions, serializers

from portal.parsers import MAX_JSON_DEPTH, megabytes
from portal.serializers import WriteRules
from portal.throttling import counted_methods

ID_MAX = 2**63 - 1  # the database's 64-bit integer: a larger id is "no such object", a 400 or 404

ERROR = {
    "type": "object",
    "description": "Why the request was refused.",
    "properties": {"detail": {"type": "string", "description": "The reason, in the request's language."}},
    "required": ["detail"],
}
FIELD_ERRORS = {
    "type": "object",
    "description": "What is wrong with the input: for each field at fault, its messages (nothing is kept).",
    "properties": {
        "detail": {
            "type": "string",
            "description": "Why the whole request was refused (malformed JSON, JSON nested more than "
            f"{MAX_JSON_DEPTH} levels deep, not a JSON object); then no field is named.",
        },
        "non_field_errors": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Messages about the request as a whole, or about several fields together.",
        },
    },
    "additionalProperties": {
        "description": "Messages for the field of that name: a list of strings; for a nested object, an object of "
        "this same shape; for a list of objects, a list with one such object per item."
    },
}

ERROR_DESCRIPTIONS = {
    400: "Invalid input: a field's value, a filter, a state the object is not in, or a body that is not a JSON "
    "object. Nothing is changed.",
    401: "No credentials, or a token that is unknown, revoked or expired (the message says which).",
    403: "Signed in but not allowed: a role that cannot do this (read-only member, program staff only, program "
    "managers only), or a browser session's write without its CSRF token.",
    404: "No such object, or one you may not see (the same answer); for a list, a page past the last.",
    413: f"The body is over {megabytes(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)} MB (JSON, form or multipart alike): "
    "nothing of it is read.",
    415: "A Content-Type this operation does not read.",
    429: "Too many requests: try again after Retry-After seconds.",
    503: "The database did not answer (a restart, a failover): nothing was changed; try again after Retry-After "
    "seconds (portal/database.py).",
}
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
# Query parameters a list accepts without ever refusing them: a page out of range is a 404, an unknown ordering is
# ignored (DRF's OrderingFilter).
LENIENT_QUERY = {"page", "ordering"}
SIGNED_IN = (permissions.AllowAny, permissions.IsAuthenticated)


class AutoSchema(openapi.AutoSchema):
    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        for parameter in operation.get("parameters", []):
            bound_id(parameter["schema"])
        responses = operation["responses"]
        for code, description in self.error_codes(operation).items():
            if str(code) not in responses:
                responses[str(code)] = self.error_response(code, description)
        for code, response in responses.items():
            if code >= "400" and "content" not in response:  # declared by the view with a description only
                responses[code] = {**self.error_response(int(code), response["description"]), **response}
        operation["responses"] = dict(sorted(responses.items()))
        return operation

    def error_codes(self, operation: dict) -> dict[int, str]:
        view, method = self.view, self.method
        query = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
        authenticates = bool(getattr(view, "authentication_classes", ()))
        permission_classes = getattr(view, "permission_classes", ())
        codes: dict[int, str] = {}
        if "requestBody" in operation or query - LENIENT_QUERY or method not in SAFE_METHODS:
            codes[400] = ERROR_DESCRIPTIONS[400]
        if authenticates:
            codes[401] = ERROR_DESCRIPTIONS[401]
            if method not in SAFE_METHODS or not all(issubclass(p, SIGNED_IN) for p in permission_classes):
                codes[403] = ERROR_DESCRIPTIONS[403]
        if any(p["in"] == "path" for p in operation.get("parameters", [])) or "page" in query:
            codes[404] = ERROR_DESCRIPTIONS[404]
        elif self._resolves_organization_slug():
            codes[404] = "The organization named is not one of yours (or does not exist: the same answer)."
        if method not in SAFE_METHODS:  # every write's body is held to one limit (portal.parsers)
            codes[413] = ERROR_DESCRIPTIONS[413]
        if "requestBody" in operation and getattr(view, "parser_classes", ()):
            codes[415] = ERROR_DESCRIPTIONS[415]
        if method in counted_methods(view):
            codes[429] = ERROR_DESCRIPTIONS[429]
        # Any operation: a lost or refused database connection is a 503, never a 500.
        codes[503] = ERROR_DESCRIPTIONS[503]
        handler = getattr(view, getattr(view, "action", None) or method.lower(), None)
        for declared in (getattr(view, "error_responses", {}), getattr(handler, "error_responses", {})):
            codes.update(declared)
        return {code: description for code, description in codes.items() if description is not None}

    def _resolves_organization_slug(self) -> bool:
        """A request body whose `organization` is a plain slug, not a related field the serializer resolves: the
        view resolves it through tenants.access, where another organization's slug is a 404."""
        serializer = self.get_request_serializer() if self.method not in SAFE_METHODS else None
        fields = getattr(serializer, "fields", None) if isinstance(serializer, serializers.BaseSerializer) else None
        if fields is None and isinstance(serializer, type) and issubclass(serializer, serializers.BaseSerializer):
            fields = serializer().fields
        field = (fields or {}).get("organization")
        return field is not None and not field.read_only and not isinstance(field, serializers.RelatedField)

    def error_response(self, code: int, description: str) -> dict:
        name, schema = ("FieldErrors", FIELD_ERRORS) if code == 400 else ("Error", ERROR)
        component = ResolvedComponent(name=name, type=ResolvedComponent.SCHEMA, schema=schema, object=name)
        self.registry.register_on_missing(component)
        response = {"description": description, "content": {"application/json": {"schema": component.ref}}}
        if code == 401:
            response["headers"] = {
                "WWW-Authenticate": {
                    "schema": {"type": "string"},
                    "description": "How to authenticate: Token (an API token in the Authorization header).",
                }
            }
        if code in (429, 503):
            response["headers"] = {
                "Retry-After": {"schema": {"type": "integer"}, "description": "Seconds until a request may succeed."}
            }
        return response

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "request" and isinstance(serializer, WriteRules | type) and _refuses_unknown(serializer):
            schema["additionalProperties"] = False  # a field it does not take is a 400 naming it
        return schema

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if not schema:
            return schema
        if isinstance(field, serializers.PrimaryKeyRelatedField) or _is_auto_id(field):
            bound_id(schema)
        elif isinstance(field, serializers.SlugRelatedField) and direction == "request":
            length = _slug_length(field)
            if length and "maxLength" not in schema:
                schema["maxLength"] = length
            schema.setdefault("minLength", 1)  # "" is no slug: a 400 (portal.serializers), null says none
        if isinstance(field, serializers.ListSerializer) and schema.get("type") == "array":
            for bound, keyword in ((field.min_length, "minItems"), (field.max_length, "maxItems")):
                if bound is not None:
                    schema.setdefault(keyword, bound)  # a list of objects' bounds, as validation holds it
        if direction == "response" and not schema.get("nullable") and _may_be_null(field):
            schema = append_meta(schema, {"nullable": True})
        return schema

    def _insert_field_validators(self, field, schema):
        super()._insert_field_validators(field, schema)
        if schema.get("type") not in ("integer", "number"):
            return
        # A validator of our own that declares its bound the way Django's Min/MaxValueValidator do.
        for validator in field.validators:
            code, limit = getattr(validator, "code", None), getattr(validator, "limit_value", None)
            if isinstance(limit, int | float) and code == "min_value":
                schema["minimum"] = max(schema.get("minimum", limit), limit)
            elif isinstance(limit, int | float) and code == "max_value":
                schema["maximum"] = min(schema.get("maximum", limit), limit)


def _refuses_unknown(serializer) -> bool:
    serializer_class = serializer if isinstance(serializer, type) else type(serializer)
    return issubclass(serializer_class, WriteRules)


def errors(codes: dict[int, str | None]):
    """On a view's handler: a code the rules above cannot know (with when it is answered), or None to drop one they
    add that this handler never answers (a revocation that is idempotent has no 400)."""

    def decorate(handler):
        handler.error_responses = codes
        return handler

    return decorate


def bound_id(schema: dict) -> None:
    """An integer id (or page number) without bounds of its own: 1 to the database's largest."""
    if schema.get("type") == "integer" and "minimum" not in schema and "maximum" not in schema:
        schema["minimum"], schema["maximum"] = 1, ID_MAX


def _model_field_path(field) -> list[models.Field] | None:
    """The model fields a serializer field reads, from its serializer's model along its source; None when the
    source is not (only) model fields: a property or a method says its own nullability."""
    model = getattr(getattr(field.parent, "Meta", None), "model", None)
    if model is None or field.source == "*" or not getattr(field, "source_attrs", None):
        return None
    path = []
    for attr in field.source_attrs:
        if model is None:
            return None
        try:
            model_field = model._meta.get_field(attr)
        except FieldDoesNotExist:
            return None
        path.append(model_field)
        model = model_field.related_model if model_field.is_relation else None
    return path


def _may_be_null(field) -> bool:
    if isinstance(field, serializers.ListSerializer | serializers.ManyRelatedField | serializers.ListField):
        return False  # a list is empty, never null
    path = _model_field_path(field)
    if not path or path[-1].many_to_many or path[-1].one_to_many:
        return False
    return any(model_field.null for model_field in path)


def _is_auto_id(field) -> bool:
    path = _model_field_path(field)
    return bool(path) and len(path) == 1 and isinstance(path[0], models.AutoField)


def _slug_length(field) -> int | None:
    queryset = getattr(field, "queryset", None)
    if queryset is None:
        return None
    try:
        return getattr(queryset.model._meta.get_field(field.slug_field), "max_length", None)
    except FieldDoesNotExist:
        return None
