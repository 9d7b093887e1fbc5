"""API shapes of capacity plans: what a manager asks the planner, and the plan it answers. Serializers parse;
tenants.capacity.planning.services plans and applies."""

from __future__ import annotations

from django.utils.translation import gettext as _
from rest_framework import serializers

from portal import serializers as api
from tenants.access import visible_organizations
from tenants.capacity.planning.services import Growth, PlanAsk
from tenants.capacity.planning.solver import FAIRNESS_RULES
from tenants.cycle import IN_CYCLE
from tenants.models import CapacityPool, CapacityRequest, Organization

# The planner's input bounds, read by validation and the schema alike. Growth entries each add a capacity step to
# every day of the pool after them: 10,000 took 33 s to model inside the web request, past the solver's own limit.
# MAX_POOL_GROWTH is far above a real question (a few pools grown on a few days). One weight per organization.
MAX_WEIGHT = 10
MAX_POOL_GROWTH = 50
MAX_GROWTH_INSTANCES = 100_000


class PoolGrowthSerializer(api.Serializer):
    pool = serializers.PrimaryKeyRelatedField(
        queryset=CapacityPool.objects.select_related("instance_type", "program"), help_text="Id of the pool grown."
    )
    instances = serializers.IntegerField(
        min_value=1, max_value=MAX_GROWTH_INSTANCES, help_text="Instances added to the pool."
    )
    starts_on = serializers.DateField(validators=[IN_CYCLE], help_text="First day the added instances are there.")


class WhatIfSerializer(api.Serializer):
    pool_growth = PoolGrowthSerializer(
        many=True,
        required=False,
        max_length=MAX_POOL_GROWTH,
        help_text=f"Plan as if these pools had more allocatable instances from a day on (at most {MAX_POOL_GROWTH} "
        "entries, one per pool and day).",
    )

    def validate_pool_growth(self, growth: list[dict]) -> list[dict]:
        days = [(g["pool"].pk, g["starts_on"]) for g in growth]
        if len(set(days)) < len(days):
            raise serializers.ValidationError(_("Grow each pool once per day: add the instances up."))
        return growth

    approve_as_asked = serializers.PrimaryKeyRelatedField(
        queryset=CapacityRequest.objects.none(),  # narrowed to the caller's scope by PlanRequestSerializer
        required=False,
        allow_null=True,
        help_text="Id of a submitted request to plan as approved as asked; the answer lists the requests that "
        "would then get less (displaced).",
    )


class WeightSerializer(api.Serializer):
    organization = api.SlugRelatedField(
        slug_field="slug",
        queryset=Organization.objects.none(),  # narrowed to the caller's scope by PlanRequestSerializer
        help_text="Slug of the organization weighted.",
    )
    weight = serializers.IntegerField(
        min_value=1, max_value=MAX_WEIGHT, help_text="Its weight in the max-min rule (default 1 for every other)."
    )


class PlanRequestSerializer(api.Serializer):
    """What a manager asks the planner."""

    pools = serializers.PrimaryKeyRelatedField(
        queryset=CapacityPool.objects.select_related("instance_type", "program"),
        many=True,
        required=False,
        help_text="Ids of the pools to plan; empty or left out: every pool with submitted requests.",
    )
    requests = serializers.PrimaryKeyRelatedField(
        queryset=CapacityRequest.objects.none(),  # narrowed to the caller's scope in __init__
        many=True,
        required=False,
        help_text="Ids of submitted requests to plan; left out: every submitted request of the pools.",
    )
    fairness = serializers.ChoiceField(
        choices=[(rule, rule) for rule in FAIRNESS_RULES],
        default="maxmin",
        help_text="maxmin (default): first the smallest share granted ÷ asked of any organization as large as "
        "possible, then the most instance-hours; total: the most instance-hours only. Both never grant less than "
        "first-come-first-served.",
    )
    weights = WeightSerializer(
        many=True,
        required=False,
        help_text="Weights per organization for the max-min rule (share ÷ weight); one per organization.",
    )
    time_limit = serializers.FloatField(
        required=False,
        min_value=0.5,
        max_value=30,
        help_text="Seconds the solver may take (default: the portal's CAPACITY_PLAN_TIME_LIMIT).",
    )
    what_if = WhatIfSerializer(
        required=False, help_text="Read-only questions: a plan with any is stored but can never be applied."
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        request = self.context.get("request")
        if request is not None:
            user = request.user
            self.fields["requests"].child_relation.queryset = CapacityRequest.objects.visible_to(user).select_related(
                "pool"
            )
            what_if = self.fields["what_if"].fields["approve_as_asked"]
            what_if.queryset = CapacityRequest.objects.visible_to(user).select_related("pool", "organization")
            self.fields["weights"].child.fields["organization"].queryset = visible_organizations(user)

    def validate_weights(self, weights: list[dict]) -> list[dict]:
        slugs = [w["organization"].slug for w in weights]
        twice = sorted({slug for slug in slugs if slugs.count(slug) > 1})
        if twice:
            raise serializers.ValidationError(
                _("One weight per organization: %(slugs)s given more than once.") % {"slugs": ", ".join(twice)}
            )
        return weights

    def ask(self) -> PlanAsk:
        data = self.validated_data
        what_if = data.get("what_if") or {}
        return PlanAsk(
            pools=list(data.get("pools") or []),
            requests=list(data.get("requests") or []),
            fairness=data["fairness"],
            weights={w["organization"].pk: w["weight"] for w in data.get("weights") or []},
            time_limit=data.get("time_limit"),
            growth=[Growth(g["pool"], g["instances"], g["starts_on"]) for g in what_if.get("pool_growth") or []],
            approve_as_asked=what_if.get("approve_as_asked"),
        )


class ApplySerializer(api.Serializer):
    requests = serializers.ListField(
        child=serializers.IntegerField(min_value=1),
        required=False,
        allow_empty=False,
        help_text="Ids of the plan's granted requests to apply; left out: all of them.",
    )


class ReasonSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="full: the pool has no more room on `day`; passed: the window is over.")
    day = serializers.DateField(required=False, help_text="The bottleneck day of the asked window.")
    allocatable = serializers.IntegerField(required=False, help_text="Allocatable instances that day.")
    existing = serializers.IntegerField(required=False, help_text="Instances already allocated that day.")
    planned = serializers.IntegerField(required=False, help_text="Instances this plan grants to others that day.")
    room = serializers.IntegerField(required=False, help_text="Instances still free that day with the plan in.")
    planned_for = serializers.CharField(
        required=False, help_text="Who the plan grants that day's instances to (organization and count)."
    )


class PlannedRequestSerializer(serializers.Serializer):
    request = serializers.IntegerField(help_text="Id of the capacity request.")
    number = serializers.CharField(help_text="The request's number as people name it (R-13).")
    organization = serializers.CharField(help_text="Name of the organization that asked.")
    organization_id = serializers.IntegerField(help_text="Id of the organization that asked.")
    pool = serializers.IntegerField(help_text="Id of the pool asked of.")
    pool_name = serializers.CharField(help_text="The pool's instance type and region.")
    asked_instances = serializers.IntegerField(help_text="Instances asked for.")
    asked_starts_on = serializers.DateField(help_text="First day asked for.")
    asked_ends_on = serializers.DateField(help_text="Last day asked for, inclusive.")
    start_slack_days = serializers.IntegerField(help_text="Days the request allows its window to move later.")
    decision = serializers.ChoiceField(
        choices=[(c, c) for c in ("as_asked", "trimmed", "shifted", "shifted_trimmed", "pending")],
        help_text="as_asked, trimmed (fewer instances), shifted (later window), shifted_trimmed, or pending.",
    )
    instances = serializers.IntegerField(help_text="Instances the plan grants; 0 when left pending.")
    starts_on = serializers.DateField(allow_null=True, help_text="First day granted; null when left pending.")
    ends_on = serializers.DateField(allow_null=True, help_text="Last day granted; null when left pending.")
    shift_days = serializers.IntegerField(help_text="Days the granted window moved later than asked.")
    asked_hours = serializers.IntegerField(help_text="Instance-hours asked for.")
    granted_hours = serializers.IntegerField(help_text="Instance-hours the plan grants.")
    reason = ReasonSerializer(allow_null=True, help_text="Why it is not granted as asked; null when it is.")


class PlannedOrganizationSerializer(serializers.Serializer):
    organization_id = serializers.IntegerField(help_text="Id of the organization.")
    organization = serializers.CharField(help_text="Name of the organization.")
    asked_hours = serializers.IntegerField(help_text="Instance-hours its planned requests ask for.")
    granted_hours = serializers.IntegerField(help_text="Instance-hours the plan grants it.")
    share = serializers.FloatField(help_text="granted_hours ÷ asked_hours.")


class PlannedPoolSerializer(serializers.Serializer):
    pool = serializers.IntegerField(help_text="Id of the pool.")
    name = serializers.CharField(help_text="The pool's instance type and region.")
    allocatable = serializers.IntegerField(help_text="Allocatable instances (total less spare).")
    asked_hours = serializers.IntegerField(help_text="Instance-hours the planned requests ask of this pool.")
    granted_hours = serializers.IntegerField(help_text="Instance-hours the plan grants in this pool.")
    free = serializers.ListField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Per day from the planning day to the pool's end: [day, free before the plan, free after it].",
    )


class DisplacedSerializer(serializers.Serializer):
    request = serializers.IntegerField(help_text="Id of a request that would get less.")
    number = serializers.CharField(help_text="Its number (R-13).")
    organization = serializers.CharField(help_text="Name of its organization.")
    before = serializers.IntegerField(help_text="Instances the plan without the what-if grants it.")
    after = serializers.IntegerField(help_text="Instances it gets with the request approved as asked.")


class PlanResultSerializer(serializers.Serializer):
    status = serializers.CharField(
        help_text="OPTIMAL (proven best under the rule), FEASIBLE (best found in the time limit: see gap), FCFS "
        "(the solver found nothing better than first-come-first-served in time) or EMPTY (nothing fits)."
    )
    gap = serializers.FloatField(help_text="(bound − granted) ÷ bound: 0 when optimal.")
    fairness = serializers.CharField(help_text="The fairness rule planned with: maxmin or total.")
    min_share = serializers.FloatField(
        allow_null=True, help_text="The smallest organization share the max-min rule reached; null for total."
    )
    granted_hours = serializers.IntegerField(help_text="Instance-hours the plan grants.")
    bound_hours = serializers.IntegerField(help_text="The solver's upper bound on what any plan could grant.")
    fcfs_hours = serializers.IntegerField(help_text="Instance-hours first-come-first-served would grant.")
    asked_hours = serializers.IntegerField(help_text="Instance-hours the planned requests ask for.")
    seconds = serializers.FloatField(help_text="Time the solver took.")
    planned_on = serializers.DateField(help_text="The day planned on (program time): nothing is granted before it.")
    requests = PlannedRequestSerializer(many=True, help_text="Per request, oldest submission first.")
    organizations = PlannedOrganizationSerializer(many=True, help_text="Per organization, asked and granted.")
    pools = PlannedPoolSerializer(many=True, help_text="Per pool, free capacity before and after the plan.")
    forced_fits = serializers.BooleanField(
        required=False, help_text="What-if approve_as_asked only: whether that request fits as asked at all."
    )
    displaced = DisplacedSerializer(
        many=True, required=False, help_text="What-if approve_as_asked only: the requests that would get less."
    )


class OutcomeSerializer(serializers.Serializer):
    request = serializers.IntegerField(source="request_id", help_text="Id of the request.")
    number = serializers.CharField(help_text="Its number (R-13).")
    applied = serializers.BooleanField(help_text="Whether the approval was made.")
    message = serializers.CharField(help_text="Approved, or why it was refused (changed since the plan, …).")
    allocation = serializers.CharField(help_text="Number of the allocation made (A-13); empty when refused.")


class CapacityPlanSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="Id of the stored plan, for applying it.")
    created_by = serializers.CharField(source="created_by.username", help_text="Username of the manager who made it.")
    created_at = serializers.DateTimeField(help_text="When the plan was made.")
    what_if = serializers.JSONField(
        source="inputs.what_if", help_text="The what-if changes it was made with; empty for a plan to apply."
    )
    result = PlanResultSerializer(help_text="The plan.")


class ApplyResultSerializer(serializers.Serializer):
    plan = serializers.IntegerField(help_text="Id of the plan applied.")
    outcomes = OutcomeSerializer(many=True, help_text="Per request, applied or refused with the reason.")
