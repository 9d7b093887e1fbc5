"""REST API of outcomes: what the pages under /outcomes/ record, for scripts. Rows come from `visible_to(user)`
(TenantScopedViewSet), so another organization's milestone, deliverable, budget or report is a 404, and a tenant
never sees the program's budget or reports. Writes parse input with a serializer and call one service of
workloads.outcomes.services, which decides who may act; where the role alone refuses a write (a member setting a
milestone or a budget, a tenant deciding on a milestone), the 403 comes before the body is read."""

from __future__ import annotations

from contextlib import contextmanager

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import BooleanField, ExpressionWrapper, Q
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from tenants.access import get_org_access_or_404, is_program_manager, is_program_staff, require
from tenants.api import TenantScopedViewSet, WritesByRole, organization_for_write
from tenants.models import Program
from workloads.outcomes.budget import budget_standings
from workloads.outcomes.filters import BudgetFilter, DeliverableFilter, MilestoneFilter, ReportFilter
from workloads.outcomes.milestones import milestone_states
from workloads.outcomes.models import Budget, Deliverable, Milestone, Report
from workloads.outcomes.serializers import (
    BudgetSerializer,
    DeliverableSerializer,
    MilestoneDecisionSerializer,
    MilestoneEvidenceSerializer,
    MilestoneSerializer,
    ReportSerializer,
)
from workloads.outcomes.services import (
    MANAGERS_ONLY,
    MEMBERS_ONLY,
    confirm_milestone,
    create_milestone,
    drop_milestone,
    record_deliverable,
    remove_deliverable,
    report_milestone,
    return_milestone,
    set_budget,
    update_deliverable,
    update_milestone,
)

DECISIONS = {"confirm": confirm_milestone, "return": return_milestone, "drop": drop_milestone}


@contextmanager
def _api_names():
    """A service's field errors under the API's names: a milestone's target_tokens is training_tokens here."""
    try:
        yield
    except DjangoValidationError as error:
        if "target_tokens" in getattr(error, "error_dict", {}):
            error.error_dict["training_tokens"] = error.error_dict.pop("target_tokens")
        raise


def _stays(data: dict, organization) -> None:
    """A write may name the organization a row already has (a client sends back what it read), never another; the
    name is taken out of `data`, which goes to the service."""
    if "organization" in data and data.pop("organization") != (organization.slug if organization else None):
        raise ValidationError({"organization": [_("This cannot move to another organization.")]})


class WithFigures:
    """Lists and details whose rows carry figures computed for the page at once (`figures(rows)`: extra serializer
    context), never one row at a time."""

    def figures(self, rows: list) -> dict:
        raise NotImplementedError

    def _data(self, objects, *, many: bool = False):
        rows = list(objects) if many else [objects]
        context = {**self.get_serializer_context(), **self.figures(rows)}
        return self.get_serializer(rows if many else objects, many=many, context=context).data

    def _fresh(self, obj):
        return self._data(self.get_queryset().get(pk=obj.pk))

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(self._data(page, many=True))

    def retrieve(self, request, *args, **kwargs):
        return Response(self._data(self.get_object()))


@extend_schema_view(
    list=extend_schema(summary="Milestones, with where each stands (your org's; every org's for program staff)"),
    retrieve=extend_schema(summary="A milestone, with its state, tokens trained and projected date"),
    create=extend_schema(summary="Set a milestone of an organization's funding agreement (program managers)"),
    update=extend_schema(summary="Change a milestone's fields (program managers)"),
    partial_update=extend_schema(summary="Change some of a milestone's fields (program managers)"),
)
class MilestoneViewSet(
    WithFigures,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    TenantScopedViewSet,
):
    """Milestones from each organization's funding agreement. Program managers set them; the organization's
    members report one done (`report`); program staff confirm, return or drop it (`decide`). A measured milestone
    (a workload and its tokens) is met by itself."""

    model = Milestone
    serializer_class = MilestoneSerializer
    filterset_class = MilestoneFilter
    ordering_fields = ["due_on", "title", "updated_at"]
    ordering = ["due_on", "pk"]

    def scope_queryset(self, queryset):
        return queryset.select_related("organization", "workload", "reported_by", "confirmed_by", "created_by")

    def figures(self, rows: list[Milestone]) -> dict:
        """The milestones' states: one milestone_states() call for the whole page."""
        return {"states": {state.milestone.pk: state for state in milestone_states(rows)}}

    def create(self, request, *args, **kwargs):
        require(is_program_manager(request.user), str(MANAGERS_ONLY))
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        organization = organization_for_write(request.user, data.pop("organization", None))
        with _api_names():
            milestone = create_milestone(user=request.user, organization=organization, data=data)
        return Response(self._fresh(milestone), status=status.HTTP_201_CREATED)

    def update(self, request, *args, **kwargs):
        milestone = self.get_object()
        require(is_program_manager(request.user), str(MANAGERS_ONLY))
        serializer = self.get_serializer(milestone, data=request.data, partial=kwargs.get("partial", False))
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        _stays(data, milestone.organization)
        with _api_names():
            milestone = update_milestone(user=request.user, milestone=milestone, data=data)
        return Response(self._fresh(milestone))

    @extend_schema(summary="Report a milestone done, with its evidence (the organization's members)",
                   request=MilestoneEvidenceSerializer, responses=MilestoneSerializer)  # fmt: skip
    @action(detail=True, methods=["post"], filterset_class=None)
    def report(self, request, pk=None, **kwargs):
        """An open milestone that is not measured becomes reported; program staff then confirm or return it."""
        milestone = self.get_object()
        access = get_org_access_or_404(request.user, milestone.organization.slug)
        access.require(access.acts, str(MEMBERS_ONLY))
        body = MilestoneEvidenceSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        milestone = report_milestone(user=request.user, milestone=milestone, evidence=body.validated_data["evidence"])
        return Response(self._fresh(milestone))

    @extend_schema(summary="Confirm, return or drop a milestone (program staff; dropping: program managers)",
                   request=MilestoneDecisionSerializer, responses=MilestoneSerializer)  # fmt: skip
    @action(detail=True, methods=["post"], filterset_class=None)
    def decide(self, request, pk=None, **kwargs):
        """confirm: a reported milestone is met; return: not met yet, with a comment the organization reads; drop:
        the milestone no longer applies, with a comment."""
        milestone = self.get_object()
        require(is_program_staff(request.user), _("Program staff confirm a milestone."))
        body = MilestoneDecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        decide = DECISIONS[body.validated_data["decision"]]
        milestone = decide(user=request.user, milestone=milestone, comment=body.validated_data["comment"])
        return Response(self._fresh(milestone))


@extend_schema_view(
    list=extend_schema(summary="Deliverables: model releases, evaluation results, papers (your org's; all for staff)"),
    create=extend_schema(summary="Record a deliverable (the organization's members)"),
    update=extend_schema(summary="Change a deliverable (the organization's members)"),
    partial_update=extend_schema(summary="Change some of a deliverable's fields (the organization's members)"),
    destroy=extend_schema(summary="Remove a deliverable (the organization's members; kept in the audit trail)"),
)
class DeliverableViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    TenantScopedViewSet,
):
    """What each organization released. Its members record, change and remove them; program staff read all."""

    model = Deliverable
    serializer_class = DeliverableSerializer
    filterset_class = DeliverableFilter
    ordering_fields = ["released_on", "title", "updated_at"]
    ordering = ["-released_on", "-pk"]

    def scope_queryset(self, queryset):
        return queryset.select_related("organization", "created_by")

    def _fresh(self, deliverable: Deliverable):
        return self.get_serializer(self.get_queryset().get(pk=deliverable.pk)).data

    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        organization = organization_for_write(request.user, data.pop("organization", None))
        deliverable = record_deliverable(user=request.user, organization=organization, data=data)
        return Response(self._fresh(deliverable), status=status.HTTP_201_CREATED)

    def update(self, request, *args, **kwargs):
        deliverable = self.get_object()
        serializer = self.get_serializer(deliverable, data=request.data, partial=kwargs.get("partial", False))
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        _stays(data, deliverable.organization)
        deliverable = update_deliverable(user=request.user, deliverable=deliverable, data=data)
        return Response(self._fresh(deliverable))

    def perform_destroy(self, instance):
        remove_deliverable(user=self.request.user, deliverable=instance)


class BudgetWrites(WritesByRole):
    """WritesByRole, where the program's own budget (no organization) is program staff's alone: only they see it,
    and the service lets program managers only change any budget."""

    def has_object_permission(self, request, view, obj) -> bool:
        return obj.organization_id is None or super().has_object_permission(request, view, obj)


SET_BUDGET = {
    201: OpenApiResponse(BudgetSerializer, description="The organization (or the program) had no budget: it is set."),
    200: OpenApiResponse(BudgetSerializer, description="It had one: the fields sent are changed."),
}


@extend_schema_view(
    list=extend_schema(summary="Budgets with spend to date and the forecast (your org's; all for program staff)"),
    retrieve=extend_schema(summary="A budget with spend to date, the forecast and its range"),
    create=extend_schema(
        summary="Set an organization's or the program's budget (program managers)", responses=SET_BUDGET
    ),
    update=extend_schema(summary="Change a budget (program managers)"),
    partial_update=extend_schema(summary="Change some of a budget's fields (program managers)"),
)
class BudgetViewSet(
    WithFigures,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    TenantScopedViewSet,
):
    """Budgets of the current program, each with its standing: the figures of the outcomes pages
    (workloads.outcomes.budget). A tenant reads its own organization's; program staff every one and the program's."""

    model = Budget
    serializer_class = BudgetSerializer
    permission_classes = [BudgetWrites]
    filterset_class = BudgetFilter
    ordering_fields = ["updated_at"]
    ordering = ["program", "organization__name", "pk"]

    def scope_queryset(self, queryset):
        return queryset.select_related("program", "organization", "updated_by")

    def figures(self, rows: list[Budget]) -> dict:
        """The budgets' standings: standings() once per program for the whole page."""
        return {"standings": budget_standings(rows)}

    def create(self, request, *args, **kwargs):
        """Sets the budget of the organization named (null: the program's) in the current program; if it has one,
        only the fields sent change."""
        require(is_program_manager(request.user), str(MANAGERS_ONLY))
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        slug = data.pop("organization")
        organization = get_org_access_or_404(request.user, slug).organization if slug else None
        program = Program.objects.first()
        if program is None:
            raise ValidationError({"non_field_errors": [_("No program is set up yet.")]})
        had = Budget.objects.visible_to(request.user).filter(program=program, organization=organization).exists()
        budget = set_budget(user=request.user, program=program, organization=organization, data=data)
        return Response(self._fresh(budget), status=status.HTTP_200_OK if had else status.HTTP_201_CREATED)

    def update(self, request, *args, **kwargs):
        budget = self.get_object()
        require(is_program_manager(request.user), str(MANAGERS_ONLY))
        serializer = self.get_serializer(budget, data=request.data, partial=kwargs.get("partial", False))
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        _stays(data, budget.organization)
        set_budget(user=request.user, program=budget.program, organization=budget.organization, data=data)
        return Response(self._fresh(budget))


@extend_schema_view(
    list=extend_schema(summary="Reports for the funding body (your org's; every one for program staff)"),
    retrieve=extend_schema(summary="A report's metadata, with where to download its files"),
)
class ReportViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantScopedViewSet):
    """The monthly and end-of-cycle reports generated for the funding body: metadata and download links, never
    the files' bytes. A tenant reads its own organization's; program staff every one and the program's."""

    model = Report
    serializer_class = ReportSerializer
    filterset_class = ReportFilter
    ordering_fields = ["first_day", "generated_at"]
    ordering = ["-first_day", "organization__name", "language", "pk"]

    def scope_queryset(self, queryset):
        has_pdf = ExpressionWrapper(Q(pdf__isnull=False), output_field=BooleanField())
        return queryset.select_related("program", "organization").defer("xlsx", "pdf").annotate(has_pdf=has_pdf)
