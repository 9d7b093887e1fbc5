"""The API's one rule for a request body (docs/api.md), for every endpoint alike:

- **Size.** At most `settings.DATA_UPLOAD_MAX_MEMORY_SIZE` (2.5 MB), JSON, form or multipart; the one exception is a
  view that declares its own `max_body_bytes` (the ingest endpoints: 20 MB, workloads.reporting.ingest). Over it is a
  413 naming the limit, answered from the Content-Length before anything is read or anyone authenticated
  (`BodyLimitMiddleware`), and again by the parser for a body that arrives longer than it said.
- **Depth.** JSON nested deeper than MAX_JSON_DEPTH (arrays and objects) is a 400 "nested too deeply (limit N)",
  never Python's RecursionError (a 500): checked on every API write before its view runs, and by `loads()` for the
  JSON a view reads itself (the ingest body, a neuron-monitor report).
- **Shape.** A write is a JSON object: `0`, `null`, `false` or a list is a 400 (`ObjectJSONParser`).
- **Where.** Every write under /api/ and /scim/ (SCIM provisioning, tenants/scim/: its 413 and 400 are SCIM errors).

Kept apart from portal.api: DRF imports the parser classes named in its settings while rest_framework.views is being
imported, so this module must not import rest_framework.views (portal.api does)."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.http import JsonResponse
from django.utils.translation import gettext as _
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser
from rest_framework.utils import json

# The deepest body any endpoint takes is four levels (a capacity plan's what_if.pool_growth[0]); a neuron-monitor
# report, seven. Python's own parser gives up near 1,000 levels with a RecursionError, at a depth that depends on
# the stack it is called from: this limit is ours, and the same everywhere.
MAX_JSON_DEPTH = 32
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# The paths whose writes follow these rules: the REST API, and SCIM provisioning (tenants/scim/), whose clients send
# application/scim+json and read errors in SCIM's own format.
API_PREFIXES = ("/api/", "/scim/")
SCIM_PREFIX = "/scim/"
SCIM_ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # a JSON string, escapes and all
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_EMPTY_PAIR = re.compile(r"\[\]|\{\}")


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"


def max_body_bytes(view=None) -> int:
    """The body limit of a view (a class, or the function Django resolved): its own `max_body_bytes`, else the
    API's, Django's DATA_UPLOAD_MAX_MEMORY_SIZE (which also bounds every form Django reads)."""
    view_class = getattr(view, "cls", None) or getattr(view, "view_class", None) or view
    return getattr(view_class, "max_body_bytes", None) or settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def megabytes(size: int) -> str:
    return f"{size / 2**20:.1f}".removesuffix(".0")


def too_large(*, size: int, limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        _("The request body is %(size)s MB; the limit is %(limit)s MB: nothing of it was read.")
        % {"size": megabytes(max(size, limit + 1)), "limit": megabytes(limit)}
    )


def too_deep() -> exceptions.ParseError:
    return exceptions.ParseError(
        _("JSON parse error - nested too deeply (limit %(limit)d).") % {"limit": MAX_JSON_DEPTH}
    )


def check_depth(text: str | bytes) -> None:
    """Raises ParseError when JSON text nests arrays and objects deeper than MAX_JSON_DEPTH, before any parser
    recurses into it. In C-speed passes: strings (whose brackets are text) and everything but brackets are removed,
    then innermost empty pairs, one level a pass; brackets left after MAX_JSON_DEPTH passes are deeper. Text that
    is not JSON is left to the parser to refuse."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    for _level in range(MAX_JSON_DEPTH):
        brackets, removed = _EMPTY_PAIR.subn("", brackets)
        if not brackets or not removed:
            return  # within the limit, or unbalanced: the parser says what is wrong
    if brackets:
        raise too_deep()


def loads(text: str | bytes, *, strict: bool = True) -> Any:
    """JSON text to Python under the API's depth rule; raises ParseError (a 400) for anything else. `strict` refuses
    NaN and Infinity, which JSON does not have."""
    check_depth(text)
    try:
        return json.loads(text, parse_constant=json.strict_constant if strict else None)
    except RecursionError:
        raise too_deep() from None
    except ValueError as error:
        raise exceptions.ParseError(f"JSON parse error - {error}") from None  # DRF's words, the library's reason


class ObjectJSONParser(JSONParser):
    """Every write takes a JSON object: `0`, `null`, `false` or a list is a 400, not a crash further in; within the
    body limit and MAX_JSON_DEPTH."""

    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        limit = max_body_bytes(parser_context.get("view"))
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise too_large(size=len(raw), limit=limit)
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError as error:
            raise exceptions.ParseError(
                _("The body is not UTF-8 text (byte %(at)d).") % {"at": error.start + 1}
            ) from None
        data = loads(text, strict=self.strict)
        if not isinstance(data, dict):
            raise exceptions.ParseError(
                _('Send a JSON object ({"field": value, …}), not %(kind)s.')
                % {"kind": type(data).__name__ if data is not None else "null"}
            )
        return data


def content_length(request) -> int:
    try:
        return max(int(request.META.get("CONTENT_LENGTH") or 0), 0)
    except ValueError:
        return 0


def _is_json(request) -> bool:
    media_type = request.content_type or ""
    return media_type == "application/json" or media_type.endswith("+json")


class BodyLimitMiddleware:
    """The body rules above for every API write, before authentication and before its view: an endpoint that never
    reads its body refuses a malformed one like the others, and a deep body cannot reach a parser that recurses."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.method not in BODY_METHODS or not request.path.startswith(API_PREFIXES):
            return None
        limit, length = max_body_bytes(view_func), content_length(request)
        if length > limit:
            return _answer(request, too_large(size=length, limit=limit))
        # Django's request.body refuses anything over DATA_UPLOAD_MAX_MEMORY_SIZE: a larger body (only the ingest's
        # may be) is checked by the view itself, through loads(), once it has read it.
        if length and _is_json(request) and length <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
            try:
                check_depth(request.body)
            except exceptions.ParseError as error:
                return _answer(request, error)
        return None


def _answer(request, error: exceptions.APIException) -> JsonResponse:
    if request.path.startswith(SCIM_PREFIX):  # RFC 7644 §3.12: a SCIM client reads only SCIM's errors
        scim_type = {"parse_error": "invalidSyntax"}.get(error.default_code)
        body = {"schemas": [SCIM_ERROR], "status": str(error.status_code), "detail": str(error.detail)}
        return JsonResponse(
            body | ({"scimType": scim_type} if scim_type else {}),
            status=error.status_code,
            content_type="application/scim+json",
        )
    return JsonResponse({"detail": str(error.detail)}, status=error.status_code)
