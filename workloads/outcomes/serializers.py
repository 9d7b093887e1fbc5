"""API shapes of outcomes: milestones (with where each stands), deliverables, budgets (with their standing against
spend) and the funding body's reports. Related fields are narrowed to what the caller may see, so another
organization's milestone, run or model release is answered like an id that does not exist; the figures are read
from the functions the pages read (workloads.outcomes.milestones, workloads.outcomes.budget)."""

from __future__ import annotations

from decimal import Decimal

from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal import serializers as api
from tenants.capacity.estimate import MAX_TOKENS, TOKEN_COUNT
from tenants.models import FREE_TEXT_MAX
from tenants.serializers import OrganizationSlugField, request_user
from workloads.outcomes.budget import Standing, budget_standings
from workloads.outcomes.milestones import STATES, MilestoneState, milestone_states
from workloads.outcomes.models import EVIDENCE_MAX, Budget, Deliverable, Milestone, Report
from workloads.outcomes.validators import validate_hf_repo_id
from workloads.records.models import TOO_MANY_PARAMETERS, TOO_MANY_TOKENS, Workload
from workloads.training.models import TrainingRun
from workloads.usage.formats import local_value, percent_value

ORGANIZATION_ON_CREATE = "Slug of the organization; may be left out when you belong to exactly one (create only)."


# --- Milestones ------------------------------------------------------------------------------------------------


class MilestoneSerializer(api.ModelSerializer):
    """A milestone as set by a program manager, with where it stands (state, tokens, projected date): the figures
    of the outcomes pages and the CSV, from workloads.outcomes.milestones."""

    organization = OrganizationSlugField(
        help_text="Slug of the organization whose funding agreement has the milestone (create only; program managers "
        "name it)."
    )
    workload = serializers.PrimaryKeyRelatedField(
        queryset=Workload.objects.none(),  # narrowed to the workloads the caller may see in __init__
        required=False,
        allow_null=True,
        help_text="Id of the organization's workload the milestone is measured on (with training_tokens); null for a "
        "milestone the organization reports done and program staff confirm.",
    )
    training_tokens = serializers.IntegerField(
        source="target_tokens",
        required=False,
        allow_null=True,
        min_value=0,
        max_value=MAX_TOKENS,
        validators=[TOKEN_COUNT],
        error_messages={"max_value": TOO_MANY_TOKENS},
        help_text="With workload: the milestone is met when the workload has trained this many tokens (not "
        "billions), at least 1,000,000; null otherwise.",
    )
    state = serializers.SerializerMethodField(
        help_text="Where the milestone stands: "
        + ", ".join(STATES)
        + " (met; reported, to confirm; past its due date and not met; a measured one that the last 7 days' rate "
        "reaches after its due date, or before it; open; dropped)."
    )
    tokens_trained = serializers.SerializerMethodField(
        help_text="Measured milestones: the workload's tokens trained (the sum of its runs'); null for the others."
    )
    projected_on = serializers.SerializerMethodField(
        help_text="Measured milestones not met: the day (program time) the last 7 days' rate reaches training_tokens; "
        "null when not measured, met, or with no progress in the last 7 days."
    )
    reported_by = api.SlugRelatedField(
        slug_field="username", read_only=True, help_text="Username of the member who reported it done; null if none."
    )
    confirmed_by = api.SlugRelatedField(
        slug_field="username",
        read_only=True,
        help_text="Username of the program staff member who confirmed it met; null if nobody did.",
    )
    created_by = api.SlugRelatedField(
        slug_field="username", read_only=True, help_text="Username of the program manager who set the milestone."
    )

    class Meta:
        model = Milestone
        fields = [
            "id",
            "organization",
            "title",
            "description",
            "due_on",
            "workload",
            "training_tokens",
            "status",
            "state",
            "tokens_trained",
            "projected_on",
            "evidence",
            "reported_by",
            "reported_at",
            "confirmed_by",
            "met_at",
            "created_by",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["status", "evidence", "reported_at", "met_at", "created_at", "updated_at"]
        validators = []  # the measured-whole constraint is worded per field by the service
        extra_kwargs = {
            "title": {"help_text": 'What the funding agreement promises, e.g. "pretrain 13B on 1 T tokens".'},
            "description": {"help_text": "More about the milestone, free text; empty when none."},
            "due_on": {"help_text": "The day the milestone is due (program time)."},
            "status": {
                "help_text": "As recorded: open, reported (done, to confirm), met or dropped. A measured milestone "
                "is set met by the portal when its tokens are trained."
            },
            "evidence": {"help_text": "What the organization said shows it done; empty until reported."},
            "reported_at": {"help_text": "When it was reported done; null until then."},
            "met_at": {
                "help_text": "When it was met (its workload's latest progress point, or when reported); null until met."
            },  # fmt: skip
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "request" in self.context:
            self.fields["workload"].queryset = Workload.objects.visible_to(request_user(self.context))

    def _state(self, milestone: Milestone) -> MilestoneState:
        # The view reads a page's states in one call; a lone milestone (the browsable API's form) reads its own.
        states = self.context.get("states") or {}
        return states.get(milestone.pk) or milestone_states([milestone])[0]

    @extend_schema_field(serializers.ChoiceField(choices=list(STATES)))
    def get_state(self, milestone: Milestone) -> str:
        return self._state(milestone).state

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_tokens_trained(self, milestone: Milestone) -> int | None:
        return self._state(milestone).tokens

    @extend_schema_field(serializers.DateField(allow_null=True))
    def get_projected_on(self, milestone: Milestone) -> str | None:
        state = self._state(milestone)
        if state.state == "met" or state.finish is None or state.finish.on is None:
            return None
        return timezone.localdate(state.finish.on).isoformat()


class MilestoneEvidenceSerializer(api.Serializer):
    evidence = serializers.CharField(
        max_length=EVIDENCE_MAX,
        help_text="What shows the milestone done: a link to the release, the report or the result, and a line on "
        "what it shows.",
    )


class MilestoneDecisionSerializer(api.Serializer):
    decision = serializers.ChoiceField(
        choices=[("confirm", "confirm"), ("return", "return"), ("drop", "drop")],
        help_text="confirm: a reported milestone is met; return: it is not met yet (say why in comment); drop: the "
        "milestone no longer applies (program managers; say why in comment).",
    )
    comment = serializers.CharField(
        max_length=FREE_TEXT_MAX,
        required=False,
        allow_blank=True,
        default="",
        help_text="Why: required to return or drop; the organization reads it in the milestone's history.",
    )


# --- Deliverables ----------------------------------------------------------------------------------------------


class DeliverableSerializer(api.ModelSerializer):
    organization = OrganizationSlugField(help_text=ORGANIZATION_ON_CREATE)
    milestone = serializers.PrimaryKeyRelatedField(
        queryset=Milestone.objects.none(),  # narrowed in __init__, like the other related fields
        required=False,
        allow_null=True,
        help_text="Id of the organization's milestone the deliverable fulfils; null for none.",
    )
    run = serializers.PrimaryKeyRelatedField(
        queryset=TrainingRun.objects.none(),
        required=False,
        allow_null=True,
        help_text="Model releases: id of the organization's training run the model came from; null for none.",
    )
    model = serializers.PrimaryKeyRelatedField(
        queryset=Deliverable.objects.none(),
        required=False,
        allow_null=True,
        help_text="Evaluation results: id of the organization's model release evaluated; null when the title names "
        "the model.",
    )
    hf_url = serializers.CharField(
        read_only=True, help_text="The model's page on the Hugging Face Hub; empty without hf_repo_id."
    )
    created_by = api.SlugRelatedField(
        slug_field="username", read_only=True, help_text="Username of the person who recorded the deliverable."
    )

    class Meta:
        model = Deliverable
        fields = [
            "id",
            "organization",
            "kind",
            "title",
            "released_on",
            "url",
            "milestone",
            "hf_repo_id",
            "hf_url",
            "license",
            "parameter_count",
            "run",
            "model",
            "benchmark",
            "setting",
            "metric",
            "score",
            "authors",
            "venue",
            "doi",
            "arxiv_id",
            "created_by",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["created_at", "updated_at"]
        # The repository's uniqueness and what each kind needs are worded per field by the service.
        validators = []
        extra_kwargs = {
            "kind": {
                "help_text": "model (a model release), evaluation (an evaluation result) or paper (a paper or "
                "technical report)."
            },  # fmt: skip
            "title": {"help_text": "The deliverable's name, e.g. the model's, the paper's title."},
            "released_on": {"help_text": "The day it was released or published."},
            "url": {"help_text": "A link to it; a paper needs a link, a DOI or an arXiv id. Empty when none."},
            "hf_repo_id": {
                "help_text": "Model releases: the repository id on the Hugging Face Hub, organization/name (e.g. "
                "llm-jp/llm-jp-3-13b), checked by the Hub's own rule and recorded once; empty when none.",
                "validators": [validate_hf_repo_id],  # without a uniqueness check: the service words it
            },
            "license": {
                "help_text": "Model releases: the Hub's license identifier, lower-case (apache-2.0, "
                "llama3.1, other); empty for the other kinds."
            },  # fmt: skip
            "parameter_count": {
                "help_text": "Model releases: the model's parameters (not billions); null when not given.",
                "error_messages": {"max_value": TOO_MANY_PARAMETERS},
            },
            "benchmark": {"help_text": "Evaluation results: the benchmark (e.g. a Japanese benchmark suite)."},
            "setting": {"help_text": "Evaluation results: how it was run, e.g. 4-shot, greedy; empty when not said."},
            "metric": {"help_text": "Evaluation results: what the score measures, e.g. accuracy, exact match."},
            "score": {"help_text": "Evaluation results: the score, to four decimals; null for the other kinds."},
            "authors": {"help_text": "Papers: the authors, free text; empty when not given."},
            "venue": {"help_text": "Papers: where it was published (a conference, a journal, arXiv)."},
            "doi": {"help_text": "Papers: the DOI, e.g. 10.48550/arXiv.2407.03963; empty when none."},
            "arxiv_id": {"help_text": "Papers: the arXiv id, e.g. 2407.03963 or 2407.03963v2; empty when none."},
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "request" in self.context:
            user = request_user(self.context)
            self.fields["milestone"].queryset = Milestone.objects.visible_to(user)
            self.fields["run"].queryset = TrainingRun.objects.visible_to(user)
            self.fields["model"].queryset = Deliverable.objects.visible_to(user).filter(kind=Deliverable.Kind.MODEL)


# --- Budgets ---------------------------------------------------------------------------------------------------


class BudgetForecastSerializer(api.Serializer):
    at_end_micro_usd = serializers.IntegerField(
        source="at_end", help_text="Spent by the end of the cycle at the recent rate, in micro-USD."
    )
    low_micro_usd = serializers.IntegerField(
        source="low", help_text="The range's low end: at the slowest of the last four 7-day windows, in micro-USD."
    )
    high_micro_usd = serializers.IntegerField(
        source="high", help_text="The range's high end: at the busiest of the last four 7-day windows, in micro-USD."
    )
    rate_micro_usd_per_day = serializers.IntegerField(
        source="rate", help_text="The recent rate: the last 7 whole days' running cost, a day's average, in micro-USD."
    )
    days_left = serializers.DecimalField(
        max_digits=12, decimal_places=6, help_text="Days from now to the end of the program's last day."
    )


class BudgetStandingSerializer(api.Serializer):
    """Read only: the budget against spend, as the outcomes pages show it (workloads.outcomes.budget.standings)."""

    currency = serializers.CharField(
        source="program.currency",
        read_only=True,
        help_text="The program's reporting currency, e.g. JPY: the *_local figures' unit.",
    )
    budget_micro_usd = serializers.IntegerField(
        help_text="The budget in micro-USD (a budget in yen read at the program's exchange rate, half to even)."
    )
    budget_local = serializers.SerializerMethodField(help_text="The budget in the program's currency, to the unit.")
    spent_micro_usd = serializers.IntegerField(
        source="spent",
        help_text="Spent to date in micro-USD: billed through billed_through, the running cost computed from the rate "
        "card after it; the usage pages' figure for the program to date.",
    )
    spent_local = serializers.SerializerMethodField(help_text="Spent to date in the program's currency, to the unit.")
    spent_percent = serializers.SerializerMethodField(help_text="Spent ÷ budget in percent, to 0.1 (the spent share).")
    left_micro_usd = serializers.IntegerField(
        source="left", help_text="Budget less spent, in micro-USD; negative when over budget."
    )
    over = serializers.BooleanField(help_text="Whether more than the budget is spent.")
    forecast = serializers.SerializerMethodField(
        help_text="The forecast to the end of the cycle and its range; null before a whole day of the cycle has passed."
    )
    forecast_percent = serializers.SerializerMethodField(
        help_text="The forecast ÷ budget in percent, to 0.1; null without a forecast."
    )
    forecast_over = serializers.BooleanField(help_text="Whether the forecast passes the budget.")
    billed_through = serializers.DateField(
        allow_null=True,
        help_text="The last day Cost Explorer has settled (billed figures through it); null when nothing is billed.",
    )

    @extend_schema_field(serializers.DecimalField(max_digits=24, decimal_places=0))
    def get_budget_local(self, standing: Standing):
        local = standing.budget_local
        return None if local is None else str(local.quantize(Decimal("1")))

    @extend_schema_field(serializers.DecimalField(max_digits=24, decimal_places=0))
    def get_spent_local(self, standing: Standing):
        return str(local_value(standing.spent, standing.program))

    @extend_schema_field(serializers.DecimalField(max_digits=12, decimal_places=1))
    def get_spent_percent(self, standing: Standing):
        return str(percent_value(standing.spent_share))

    @extend_schema_field(BudgetForecastSerializer(allow_null=True))
    def get_forecast(self, standing: Standing) -> dict | None:
        return None if standing.forecast is None else BudgetForecastSerializer(standing.forecast).data

    @extend_schema_field(serializers.DecimalField(max_digits=12, decimal_places=1, allow_null=True))
    def get_forecast_percent(self, standing: Standing):
        value = percent_value(standing.forecast_share)
        return None if value is None else str(value)


class BudgetSerializer(api.ModelSerializer):
    program = serializers.SlugRelatedField(
        slug_field="slug", read_only=True, help_text="Slug of the program (funding cycle) the budget is for."
    )
    organization = OrganizationSlugField(
        required=True,
        allow_null=True,
        help_text="Slug of the organization the budget is for; null for the whole program's (program staff read it). "
        "Create only: a budget stays with its organization.",
    )
    alert_percents = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=1000),
        max_length=5,
        required=False,
        help_text="Percents of the budget spent at which an alert fires, e.g. [80, 100]: at most five, each 1 to "
        "1000; [] for none. Default [80, 100].",
    )
    updated_by = api.SlugRelatedField(
        slug_field="username", read_only=True, help_text="Username of the program manager who last set the budget."
    )
    standing = serializers.SerializerMethodField(help_text="The budget against spend and the forecast, now.")

    class Meta:
        model = Budget
        fields = [
            "id",
            "program",
            "organization",
            "amount",
            "currency",
            "alert_percents",
            "alert_on_forecast",
            "note",
            "standing",
            "updated_by",
            "updated_at",
        ]
        read_only_fields = ["updated_at"]
        validators = []  # one budget per organization: a second create changes the first (the service)
        extra_kwargs = {
            "amount": {"help_text": "What may be spent over the cycle, in currency, to the cent (at least 0.01)."},
            "currency": {
                "help_text": "The amount's currency: JPY (default) or USD; the other is read at the "
                "program's exchange rate."
            },  # fmt: skip
            "alert_on_forecast": {
                "help_text": "Whether an alert fires when the forecast to the end of the cycle "
                "passes the budget (default true)."
            },  # fmt: skip
            "note": {"help_text": "Where the figure comes from, e.g. the funding agreement; empty when not said."},
        }

    def get_fields(self):
        fields = super().get_fields()
        if self.instance is not None and not isinstance(self.instance, list | tuple):
            fields["organization"].required = False  # a change names it only to send back what it read
        return fields

    @extend_schema_field(BudgetStandingSerializer)
    def get_standing(self, budget: Budget) -> dict:
        found = self.context.get("standings") or {}  # the view reads a page's standings at once
        standing = found.get(budget.pk) or budget_standings([budget])[budget.pk]
        return BudgetStandingSerializer(standing).data


# --- Reports ---------------------------------------------------------------------------------------------------


class ReportSerializer(api.ModelSerializer):
    """A generated report's metadata; its files are downloaded from xlsx_url and pdf_url (signed-in pages)."""

    program = serializers.SlugRelatedField(
        slug_field="slug", read_only=True, help_text="Slug of the program the report is of."
    )
    organization = serializers.SlugRelatedField(
        slug_field="slug",
        read_only=True,
        help_text="Slug of the organization the report is of; null for the whole program's (program staff only).",
    )
    has_pdf = serializers.BooleanField(read_only=True, help_text="Whether the report has its PDF (see pdf_error).")
    xlsx_url = serializers.SerializerMethodField(help_text="Where to download the XLSX workbook (signed in).")
    pdf_url = serializers.SerializerMethodField(help_text="Where to download the PDF (signed in); null without one.")

    class Meta:
        model = Report
        fields = [
            "id",
            "program",
            "organization",
            "kind",
            "first_day",
            "last_day",
            "language",
            "generated_at",
            "mailed_at",
            "has_pdf",
            "pdf_error",
            "xlsx_url",
            "pdf_url",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "kind": {"help_text": "monthly (a calendar month) or cycle (the end-of-cycle report, the whole cycle)."},
            "first_day": {"help_text": "The first day the report covers."},
            "last_day": {"help_text": "The last day the report covers, inclusive."},
            "language": {"help_text": "The report's language: en or ja."},
            "generated_at": {"help_text": "When the report was generated (a report generated again is replaced)."},
            "mailed_at": {"help_text": "When it was mailed to its recipients; null if not (yet)."},
            "pdf_error": {"help_text": "Why the report has no PDF; empty when it has one."},
        }

    def _url(self, name: str, report: Report) -> str:
        path = reverse(name, kwargs={"pk": report.pk})
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path

    def get_xlsx_url(self, report: Report) -> str:
        return self._url("outcomes:report-xlsx", report)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_pdf_url(self, report: Report) -> str | None:
        return self._url("outcomes:report-pdf", report) if report.has_pdf else None
