"""What every ingest endpoint shares (`/api/v1/clusters/{id}/jobs/ingest/`, `/health/ingest/`, `/nccl-tests/`):
who may post, the cluster posted to, and the body.

- Who: the cluster's reporter token (any other cluster's is a 404, like a cluster that does not exist), or a
  person who may act in the organization (members and program staff, with their API token or session).
- The body: JSON (`{"sacct": "…", …}`), or the report itself as text (`curl --data-binary @sacct.txt -H
  'Content-Type: text/plain'`) with the other fields in the query string. Either way one serializer validates it.
  Up to MAX_BYTES, the API's one exception to its body limit (portal.parsers): a larger body is a 413 before
  anything is read into memory.
- A report is taken whole or not at all: a bad line is a 400 naming the line, and nothing of the request is kept.
"""

from __future__ import annotations

import io

from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from portal.metrics.registry import count_ingest
from portal.parsers import ObjectJSONParser, PayloadTooLarge, too_large
from portal.throttling import IngestThrottle
from tenants.access import get_org_access_or_404
from workloads.clusters.models import Cluster
from workloads.reporting.authentication import ReporterTokenAuthentication
from workloads.reporting.models import ReporterToken

# The one exception to the API's 2.5 MB body limit (portal.parsers): a day of sacct on a busy cluster is megabytes.
MAX_BYTES = 20 * 1024 * 1024
# A cluster takes reports while it has nodes: provisioning (nodes joining), in service, degraded, and being deleted
# (the last report of its jobs).
TAKES_REPORTS = (
    Cluster.Status.PROVISIONING,
    Cluster.Status.IN_SERVICE,
    Cluster.Status.DEGRADED,
    Cluster.Status.DELETING,
)


def report_field(help_text: str, **options) -> serializers.CharField:
    """A report's text (sacct output, exporter text, an nccl-tests log): taken as written, up to the body limit."""
    return serializers.CharField(trim_whitespace=False, max_length=MAX_BYTES, help_text=help_text, **options)


class LengthRequired(exceptions.APIException):
    status_code = status.HTTP_411_LENGTH_REQUIRED
    default_code = "length_required"


class ClusterGone(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "cluster_gone"


class ReporterOrPerson(BasePermission):
    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, ReporterToken) or bool(request.user and request.user.is_authenticated)


def reporter_token(request) -> ReporterToken | None:
    return request.auth if isinstance(request.auth, ReporterToken) else None


class CountedIngest:
    """Each report posted, counted for /metrics (portal.metrics): accepted or refused, its bytes (Content-Length) and,
    accepted, what it carried: the answer's `items_field` (jobs, readings, points), else one per report."""

    items_field: str | None = None

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if request.method == "POST":
            data = getattr(response, "data", None)
            items = data.get(self.items_field, 0) if self.items_field and isinstance(data, dict) else 1
            try:
                size = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                size = 0
            match = request.resolver_match
            count_ingest(
                endpoint=match.url_name if match is not None and match.url_name else "unknown",
                accepted=response.status_code < 400,
                size=size,
                items=items if isinstance(items, int) else 0,
            )
        return response


class ClusterIngestView(CountedIngest, APIView):
    """Subclasses set `serializer_class` (whose `text_field` names the report's field) and write `ingest()`."""

    authentication_classes = [ReporterTokenAuthentication, *api_settings.DEFAULT_AUTHENTICATION_CLASSES]
    permission_classes = [ReporterOrPerson]
    throttle_classes = [IngestThrottle]  # the reports' own budget, sized for a 1,000-node cluster
    parser_classes = []  # the body is read here, within MAX_BYTES, never by a parser
    max_body_bytes = MAX_BYTES  # portal.parsers: this view's body limit, checked before it runs
    model = Cluster  # tests/test_tenant_gate.py: the id in the path names a cluster
    serializer_class = None
    error_responses = {  # the schema's answers beside the API's usual ones (portal.schema)
        409: "The cluster takes no reports: it is requested, failed, deleted or otherwise without nodes.",
        411: "The body was sent chunked: send it with a Content-Length.",
        413: f"The body is over {MAX_BYTES // 2**20} MB (the API's one exception to its limit): nothing of it is read.",
    }

    def post(self, request, pk: int, format=None):
        cluster = self.cluster(request, pk)
        payload = self.serializer_class(data=self.payload(request))
        payload.is_valid(raise_exception=True)
        actor = None if reporter_token(request) else request.user
        body, answer = self.ingest(cluster, payload.validated_data, actor=actor)
        return Response(body, status=answer)

    def ingest(self, cluster: Cluster, data: dict, *, actor) -> tuple[dict, int]:
        """The response body and status of one report."""
        raise NotImplementedError

    def cluster(self, request, pk: int) -> Cluster:
        token = reporter_token(request)
        if token is not None:
            if token.cluster_id != pk:
                raise exceptions.NotFound(_("No such cluster."))  # another cluster's report: as if it did not exist
            cluster = Cluster.objects.for_org(token.organization).select_related("allocation__pool__instance_type")
            cluster = cluster.get(pk=pk)
        else:
            clusters = Cluster.objects.visible_to(request.user).select_related(
                "organization", "allocation__pool__instance_type"
            )
            cluster = get_object_or_404(clusters, pk=pk)
            access = get_org_access_or_404(request.user, cluster.organization.slug)
            access.require(access.can_write, _("You cannot post reports for this organization's clusters."))
        if cluster.status not in TAKES_REPORTS:
            raise ClusterGone(
                _("This cluster is %(status)s: it takes no reports.") % {"status": cluster.get_status_display()}
            )
        return cluster

    def payload(self, request) -> dict:
        raw = self.read_body(request)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise exceptions.ParseError(
                _("The body is not UTF-8 text (byte %(at)d).") % {"at": error.start + 1}
            ) from None
        if request.content_type.split(";")[0].strip() == "application/json":
            # The API's own rules: a JSON object within the depth limit, else a 400.
            return ObjectJSONParser().parse(io.BytesIO(raw), parser_context={"view": self})
        # The report itself; the other fields come from the query string.
        data = {key: request.query_params.get(key) for key in request.query_params if key != "format"}
        data[self.serializer_class.text_field] = text
        return data

    def read_body(self, request) -> bytes:
        if "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
            # Django reads no chunked body: it would arrive empty and be taken for an empty report.
            raise LengthRequired(_("Send the report with a Content-Length, not chunked."))
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > MAX_BYTES:
            raise self.too_large(length)
        # Read the stream directly: request.body would refuse anything over Django's 2.5 MB form limit.
        raw = request._request.read(MAX_BYTES + 1)
        if len(raw) > MAX_BYTES:
            raise self.too_large(len(raw))
        return raw

    @staticmethod
    def too_large(size: int) -> PayloadTooLarge:
        return too_large(size=size, limit=MAX_BYTES)  # the API's one message, with this view's limit
