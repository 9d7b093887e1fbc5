"""The SCIM 2.0 endpoint (RFC 7644) under /scim/v2/: discovery (ServiceProviderConfig, ResourceTypes, Schemas),
Users and Groups. Plain Django views, not DRF: SCIM has its own media type, error format and PATCH, which
scim2-models reads and writes; a view parses the request, calls one service and renders the resource.

Every answer is application/scim+json, errors in SCIM's format (urn:ietf:params:scim:api:messages:2.0:Error), a
bug included (a logged 500 in that format). A client authenticates with a SCIM token (`Authorization: Bearer …`);
a browser session counts for nothing here, so no CSRF check applies (csrf_exempt). Without any SCIM token ever
made, every route is a 404. Writes count against the API's per-minute budget (portal.throttling, per token);
bodies follow the API's size and depth rule (portal.parsers.BodyLimitMiddleware, then loads())."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import pydantic
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import HttpResponse
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from rest_framework.exceptions import APIException
from scim2_models import (
    Context,
    Error,
    InvalidSyntaxException,
    InvalidValueException,
    ListResponse,
    NotFoundException,
    NotImplementedException,
    PatchOp,
    PayloadTooLargeException,
    ResponseParameters,
    SCIMException,
    SearchRequest,
    UnauthorizedException,
    UniquenessException,
)

from portal.parsers import loads, max_body_bytes, too_large
from portal.throttling import WriteThrottle
from tenants.scim import resources, schema, services, tokens
from tenants.scim.models import ScimGroup, ScimToken, ScimUser

logger = logging.getLogger("portal.scim")

CONTENT_TYPE = "application/scim+json"
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def scim_response(payload: dict | None, *, status: int = 200, headers: dict | None = None) -> HttpResponse:
    body = json.dumps(payload, default=str) if payload is not None else b""
    return HttpResponse(body, status=status, content_type=CONTENT_TYPE, headers=headers)


def error_response(error: Error, *, headers: dict | None = None) -> HttpResponse:
    return scim_response(error.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE), status=int(error.status),
                         headers=headers)  # fmt: skip


class ConflictError(SCIMException):
    """409 with no scimType: the request is valid but the portal's rules refuse it (the last admin)."""

    status = 409


DJANGO_CODES = {"uniqueness": UniquenessException, "last_admin": ConflictError}


class TooManyRequests(Exception):
    def __init__(self, wait: float):
        self.wait = wait


@method_decorator(csrf_exempt, name="dispatch")
class ScimView(View):
    """Authentication, the write budget, and errors in SCIM's format for every SCIM route."""

    token: ScimToken

    def dispatch(self, request, *args, **kwargs):
        try:
            if not tokens.enabled():
                raise NotFoundException(detail=_("SCIM provisioning is not set up here."))
            self.token = self.authenticate(request)
            request.auth = self.token  # whom portal.throttling counts the writes of
            throttle = WriteThrottle()
            if not throttle.allow_request(request, self):
                raise TooManyRequests(throttle.wait())
            self.links = resources.Links(base=reverse("scim-users").removesuffix("/Users"))
            self.links = resources.Links(base=request.build_absolute_uri(self.links.base))
            self.comment = f"SCIM client {self.token.name} ({self.token.prefix}…)"
            with schema.POLICY:
                return super().dispatch(request, *args, **kwargs)
        except TooManyRequests as error:
            detail = _("Too many SCIM writes: try again in %(seconds)d seconds.") % {"seconds": error.wait}
            return error_response(Error(status=429, detail=detail), headers={"Retry-After": str(int(error.wait))})
        except UnauthorizedException as error:
            return error_response(error.to_error(), headers={"WWW-Authenticate": 'Bearer realm="SCIM"'})
        except SCIMException as error:
            return error_response(error.to_error())
        except pydantic.ValidationError as error:
            return error_response(Error.from_validation_errors(error)[0])
        except DjangoValidationError as error:
            exception = DJANGO_CODES.get(error.code or "", InvalidValueException)
            return error_response(exception(detail=" ".join(error.messages)).to_error())
        except RequestDataTooBig:
            limit = max_body_bytes()
            detail = str(too_large(size=limit + 1, limit=limit).detail)
            return error_response(PayloadTooLargeException(detail=detail).to_error())
        except Exception:
            logger.exception("SCIM request failed: %s %s", request.method, request.path)
            return error_response(Error(status=500, detail=_("The portal failed to answer; the error is logged.")))

    def authenticate(self, request) -> ScimToken:
        scheme, _space, key = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise UnauthorizedException(detail=_("Send a SCIM token: Authorization: Bearer <token>."))
        token, reason = tokens.authenticate(key.strip())
        if token is None:
            raise UnauthorizedException(detail=reason)
        return token

    def http_method_not_allowed(self, request, *args, **kwargs):
        allowed = ", ".join(m.upper() for m in self._allowed_methods())
        detail = _("%(method)s is not allowed here.") % {"method": request.method}
        return error_response(Error(status=405, detail=detail), headers={"Allow": allowed})

    def body(self) -> dict[str, Any]:
        media_type = self.request.content_type or ""
        if media_type not in ("application/scim+json", "application/json"):
            raise InvalidSyntaxException(detail=_("Send application/scim+json."))
        try:
            data = loads(self.request.body)
        except APIException as error:
            raise InvalidSyntaxException(detail=str(error.detail)) from None
        if not isinstance(data, dict):
            raise InvalidSyntaxException(detail=_("Send a JSON object."))
        return data

    def parameters(self, model) -> ResponseParameters:
        """The attributes and excludedAttributes the client asked for, from the query string."""
        query = {key: self.request.GET[key] for key in ("attributes", "excludedAttributes") if key in self.request.GET}
        return ResponseParameters[model].model_validate(query)

    def render(self, resource, model, *, status: int = 200, context: Context = Context.RESOURCE_QUERY_RESPONSE):
        payload = resource.model_dump(scim_ctx=context, response_parameters=self.parameters(model))
        headers = {"Location": resource.meta.location} if status == 201 else None
        return scim_response(payload, status=status, headers=headers)


class ServiceProviderConfigView(ScimView):
    def get(self, request):
        config = schema.service_provider_config()
        return scim_response(config.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE))


class ResourceTypesView(ScimView):
    def get(self, request, name: str | None = None):
        found = schema.resource_types()
        return _discovery(found, name, _("No resource type %(id)s."))


class SchemasView(ScimView):
    def get(self, request, schema_id: str | None = None):
        return _discovery(schema.schemas(), schema_id, _("No schema %(id)s."))


def _discovery(items: list, wanted: str | None, missing: str) -> HttpResponse:
    if wanted is not None:
        item = next((item for item in items if item.id == wanted), None)
        if item is None:
            raise NotFoundException(detail=missing % {"id": wanted})
        return scim_response(item.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE))
    listing = ListResponse[type(items[0])](
        total_results=len(items), start_index=1, items_per_page=len(items), resources=items
    )
    return scim_response(listing.model_dump(scim_ctx=Context.SEARCH_RESPONSE))


class CollectionView(ScimView):
    """GET lists (filter, startIndex, count), POST creates."""

    model: type = schema.User
    lookups: dict[str, str] = {}

    def rows(self):
        raise NotImplementedError

    def resource(self, row):
        raise NotImplementedError

    def get(self, request):
        query = {key: value for key, value in request.GET.items() if key in ("filter", "startIndex", "count")}
        return self.search(query, self.parameters(self.model))

    def search(self, query: dict, parameters: ResponseParameters) -> HttpResponse:
        search = SearchRequest[self.model].model_validate(query, scim_ctx=Context.SEARCH_REQUEST)
        count = min(schema.MAX_RESULTS, search.count if search.count is not None else schema.MAX_RESULTS)
        start = search.start_index or 1
        total, page = resources.search(
            self.rows(), scim_filter=search.filter, lookups=self.lookups, render=self.resource,
            start_index=start, count=count,
        )  # fmt: skip
        listing = ListResponse[self.model](
            total_results=total, start_index=start, items_per_page=len(page), resources=page
        )
        payload = listing.model_dump(scim_ctx=Context.SEARCH_RESPONSE, response_parameters=parameters)
        return scim_response(payload)


class SearchView(ScimView):
    """POST /Users/.search and /Groups/.search (RFC 7644 §3.4.3): a list's query in a SearchRequest body. At the
    root (every resource type at once) it is a 501, which RFC 7644 allows."""

    collections: dict[str, type[CollectionView]] = {}

    def post(self, request, collection: str | None = None):
        if collection is None:
            raise NotImplementedException(detail=_("Search one resource type: POST /Users/.search or /Groups/.search."))
        if collection not in self.collections:
            raise NotFoundException(detail=_("No SCIM endpoint at %(path)s.") % {"path": request.path})
        view = self.collections[collection]()
        view.request, view.links = request, self.links
        body = self.body()
        search = SearchRequest[view.model].model_validate(body, scim_ctx=Context.SEARCH_REQUEST)
        query = {k: v for k, v in body.items() if k in ("filter", "startIndex", "count")}
        return view.search(query, ResponseParameters[view.model].model_validate(
            {"attributes": search.attributes, "excludedAttributes": search.excluded_attributes}
        ))  # fmt: skip


class UsersView(CollectionView):
    model = schema.User
    lookups = resources.USER_LOOKUPS

    def rows(self):
        return resources.users()

    def resource(self, row):
        return resources.user_resource(row, self.links)

    def post(self, request):
        data = schema.User.model_validate(self.body(), scim_ctx=Context.RESOURCE_CREATION_REQUEST)
        scim_user = services.create_user(data=data, comment=self.comment)
        resource = self.resource(resources.users().get(pk=scim_user.pk))
        return self.render(resource, schema.User, status=201, context=Context.RESOURCE_CREATION_RESPONSE)


class GroupsView(CollectionView):
    model = schema.Group
    lookups = resources.GROUP_LOOKUPS

    def rows(self):
        return resources.groups()

    def resource(self, row):
        return resources.group_resource(row, self.links)

    def post(self, request):
        data = schema.Group.model_validate(self.body(), scim_ctx=Context.RESOURCE_CREATION_REQUEST)
        group = services.save_group(group=None, data=data, comment=self.comment)
        resource = self.resource(group)
        return self.render(resource, schema.Group, status=201, context=Context.RESOURCE_CREATION_RESPONSE)


def _found(queryset, scim_id: str, kind: str):
    try:
        return queryset.get(scim_id=uuid.UUID(scim_id))
    except (ValueError, queryset.model.DoesNotExist):
        raise NotFoundException(detail=_("No %(kind)s has the id %(id)s.") % {"kind": kind, "id": scim_id}) from None


class UserView(ScimView):
    def get(self, request, scim_id: str):
        return self.render(resources.user_resource(_found(resources.users(), scim_id, "User"), self.links), schema.User)

    def put(self, request, scim_id: str):
        scim_user = _found(resources.users(), scim_id, "User")
        data = schema.User.model_validate(self.body(), scim_ctx=Context.RESOURCE_REPLACEMENT_REQUEST)
        return self._saved(services.write_user(scim_user=scim_user, data=data, comment=self.comment),
                           Context.RESOURCE_REPLACEMENT_RESPONSE)  # fmt: skip

    def patch(self, request, scim_id: str):
        scim_user = _found(resources.users(), scim_id, "User")
        patch = PatchOp[schema.User].model_validate(self.body(), scim_ctx=Context.RESOURCE_PATCH_REQUEST)
        resource = resources.user_resource(scim_user, self.links)
        patch.patch(resource)
        return self._saved(services.write_user(scim_user=scim_user, data=resource, comment=self.comment),
                           Context.RESOURCE_PATCH_RESPONSE)  # fmt: skip

    def delete(self, request, scim_id: str):
        services.delete_user(scim_user=_found(resources.users(), scim_id, "User"), comment=self.comment)
        return scim_response(None, status=204)

    def _saved(self, scim_user: ScimUser, context: Context) -> HttpResponse:
        resource = resources.user_resource(resources.users().get(pk=scim_user.pk), self.links)
        return self.render(resource, schema.User, context=context)


class GroupView(ScimView):
    def get(self, request, scim_id: str):
        group = _found(resources.groups(), scim_id, "Group")
        return self.render(resources.group_resource(group, self.links), schema.Group)

    def put(self, request, scim_id: str):
        group = _found(resources.groups(), scim_id, "Group")
        data = schema.Group.model_validate(self.body(), scim_ctx=Context.RESOURCE_REPLACEMENT_REQUEST)
        return self._saved(services.save_group(group=group, data=data, comment=self.comment),
                           Context.RESOURCE_REPLACEMENT_RESPONSE)  # fmt: skip

    def patch(self, request, scim_id: str):
        group = _found(resources.groups(), scim_id, "Group")
        patch = PatchOp[schema.Group].model_validate(self.body(), scim_ctx=Context.RESOURCE_PATCH_REQUEST)
        resource = resources.group_resource(group, self.links)
        patch.patch(resource)
        return self._saved(services.save_group(group=group, data=resource, comment=self.comment),
                           Context.RESOURCE_PATCH_RESPONSE)  # fmt: skip

    def delete(self, request, scim_id: str):
        services.delete_group(group=_found(resources.groups(), scim_id, "Group"), comment=self.comment)
        return scim_response(None, status=204)

    def _saved(self, group: ScimGroup, context: Context) -> HttpResponse:
        return self.render(resources.group_resource(group, self.links), schema.Group, context=context)


class NotFoundView(ScimView):
    """Any other path under /scim/v2/: a SCIM 404, for an authenticated client (401 before that)."""

    http_method_names = ["get", "post", "put", "patch", "delete"]

    def dispatch_any(self, request, *args, **kwargs):
        raise NotFoundException(detail=_("No SCIM endpoint at %(path)s.") % {"path": request.path})

    get = post = put = patch = delete = dispatch_any


SearchView.collections = {"Users": UsersView, "Groups": GroupsView}
