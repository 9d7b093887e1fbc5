"""What the program gets for its money, recorded beside what it spends: each organization's milestones from its
funding agreement, its deliverables (model releases, evaluation results, papers), and the budgets spend is
measured against, with the alerts they raised.

Writes go through workloads.outcomes.services; every change is in the audit trail (tenants.audit), which is also
each milestone's, deliverable's and budget's history.
"""

from __future__ import annotations

import re
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from tenants.capacity.estimate import MAX_PARAMETERS, MAX_TOKENS, PARAMETER_COUNT, TOKEN_COUNT
from tenants.models import FREE_TEXT_MAX, Organization, Program, TenantQuerySet
from workloads.outcomes.texts import alert_text
from workloads.outcomes.validators import validate_arxiv_id, validate_doi, validate_hf_repo_id
from workloads.records.models import Workload
from workloads.training.models import TrainingRun

EVIDENCE_MAX = 2_000
# The Hub's license identifiers (a model card's `license:`): apache-2.0, mit, llama3.1, gemma, cc-by-nc-4.0, other.
LICENSE = re.compile(r"^[a-z0-9][a-z0-9.+-]{0,63}$")


class Milestone(models.Model):
    """One promise of an organization's funding agreement ("pretrain 13B on 1 T tokens by 2027-02-28").

    A measured milestone names a workload and a number of tokens: it is met by itself when the workload's tokens
    reach it (workloads.outcomes.milestones), at risk when the recent rate reaches it only after its due date. The
    others are reported done by the organization, with evidence, and confirmed by program staff."""

    class Status(models.TextChoices):
        OPEN = "open", pgettext_lazy("milestone status", "Open")
        REPORTED = "reported", pgettext_lazy("milestone status", "Reported done")
        MET = "met", pgettext_lazy("milestone status", "Met")
        DROPPED = "dropped", pgettext_lazy("milestone status", "Dropped")

    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="milestones", verbose_name=_("organization")
    )
    title = models.CharField(_("title"), max_length=200)
    description = models.TextField(_("description"), blank=True, max_length=FREE_TEXT_MAX)
    due_on = models.DateField(_("due on"))
    workload = models.ForeignKey(
        Workload,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="milestones",
        verbose_name=_("measured on workload"),
        help_text=_("Leave empty for a milestone the organization reports and program staff confirm."),
    )
    target_tokens = models.PositiveBigIntegerField(
        _("tokens to train"),
        null=True,
        blank=True,
        validators=[TOKEN_COUNT, MaxValueValidator(MAX_TOKENS)],
        help_text=_("With a workload: the milestone is met when the workload has trained this many tokens."),
    )
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.OPEN)
    met_at = models.DateTimeField(_("met at"), null=True, blank=True)
    evidence = models.TextField(_("evidence"), blank=True, max_length=EVIDENCE_MAX)
    reported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.PROTECT, null=True, blank=True, related_name="+", verbose_name=_("reported by")
    )
    reported_at = models.DateTimeField(_("reported at"), null=True, blank=True)
    confirmed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("confirmed by"),
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.PROTECT, null=True, blank=True, related_name="+", verbose_name=_("created by")
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["due_on", "pk"]
        verbose_name = _("milestone")
        verbose_name_plural = _("milestones")
        indexes = [models.Index(fields=["organization", "due_on"])]
        constraints = [
            # Measured: a workload and its tokens together, or neither.
            models.CheckConstraint(
                condition=Q(workload__isnull=True, target_tokens__isnull=True)
                | Q(workload__isnull=False, target_tokens__isnull=False),
                name="milestone_measured_whole",
            ),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def measured(self) -> bool:
        return self.workload_id is not None


class Deliverable(models.Model):
    """What an organization released: a model on the Hugging Face Hub, an evaluation result, a paper or report."""

    class Kind(models.TextChoices):
        MODEL = "model", _("Model release")
        EVALUATION = "evaluation", _("Evaluation result")
        PAPER = "paper", _("Paper or technical report")

    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="deliverables", verbose_name=_("organization")
    )
    kind = models.CharField(_("kind"), max_length=16, choices=Kind.choices)
    title = models.CharField(_("title"), max_length=200)
    released_on = models.DateField(_("released on"))
    url = models.URLField(_("link"), blank=True, max_length=500)
    milestone = models.ForeignKey(
        Milestone,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="deliverables",
        verbose_name=_("for milestone"),
    )
    # A model release.
    hf_repo_id = models.CharField(
        _("Hugging Face repository"),
        max_length=96 * 2 + 1,
        blank=True,
        validators=[validate_hf_repo_id],
        help_text=_("The repository id on the Hub: organization/name, e.g. llm-jp/llm-jp-3-13b."),
    )
    license = models.CharField(_("license"), max_length=64, blank=True)
    parameter_count = models.PositiveBigIntegerField(
        _("parameters"),
        null=True,
        blank=True,
        validators=[PARAMETER_COUNT, MaxValueValidator(MAX_PARAMETERS)],
    )
    run = models.ForeignKey(
        TrainingRun,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("trained in run"),
    )
    # An evaluation result (of `model`, one of the organization's model releases, or of a model named in the title).
    model = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="evaluations",
        limit_choices_to={"kind": "model"},
        verbose_name=_("evaluated model"),
    )
    benchmark = models.CharField(_("benchmark"), max_length=120, blank=True)
    setting = models.CharField(_("setting"), max_length=120, blank=True, help_text=_("e.g. 4-shot, greedy"))
    metric = models.CharField(_("metric"), max_length=60, blank=True, help_text=_("e.g. accuracy, exact match"))
    score = models.DecimalField(
        _("score"),
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("-1000000")), MaxValueValidator(Decimal("1000000"))],
    )
    # A paper or technical report.
    authors = models.TextField(_("authors"), blank=True, max_length=EVIDENCE_MAX)
    venue = models.CharField(_("venue"), max_length=200, blank=True)
    doi = models.CharField(_("DOI"), max_length=200, blank=True, validators=[validate_doi])
    arxiv_id = models.CharField(_("arXiv id"), max_length=32, blank=True, validators=[validate_arxiv_id])
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.PROTECT, null=True, blank=True, related_name="+", verbose_name=_("recorded by")
    )
    created_at = models.DateTimeField(_("recorded at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["-released_on", "-pk"]
        verbose_name = _("deliverable")
        verbose_name_plural = _("deliverables")
        indexes = [models.Index(fields=["organization", "-released_on"])]
        constraints = [
            # Per organization (another's records say nothing to it, nor block it), as the Hub compares: case aside.
            models.UniqueConstraint(
                Lower("hf_repo_id"),
                "organization",
                condition=~Q(hf_repo_id=""),
                name="one_deliverable_per_hf_repository",
            ),
        ]

    def __str__(self) -> str:
        return self.title

    def clean(self) -> None:
        """What each kind must name; links to the organization's own milestone, run and model only."""
        errors: dict[str, str] = {}
        if self.kind == self.Kind.MODEL:
            if not self.hf_repo_id and not self.url:
                errors["hf_repo_id"] = _("Name the model's Hugging Face repository, or give a link to it.")
            if not self.license:
                errors["license"] = _("Give the license the model is released under (e.g. apache-2.0).")
        elif self.kind == self.Kind.EVALUATION:
            if not self.benchmark:
                errors["benchmark"] = _("Name the benchmark.")
            if self.score is None:
                errors["score"] = _("Give the score.")
        elif self.kind == self.Kind.PAPER and not (self.url or self.doi or self.arxiv_id):
            errors["url"] = _("Give a link, a DOI or an arXiv id.")
        if self.license and not LICENSE.match(self.license):
            errors["license"] = _("Use the Hub's license identifier: lower-case, e.g. apache-2.0, llama3.1, other.")
        own = self.organization_id
        if self.milestone_id and self.milestone.organization_id != own:
            errors["milestone"] = _("Choose one of the organization's own milestones.")
        if self.run_id and self.run.organization_id != own:
            errors["run"] = _("Choose one of the organization's own runs.")
        if self.model_id and (self.model.organization_id != own or self.model.kind != self.Kind.MODEL):
            errors["model"] = _("Choose one of the organization's own model releases.")
        if errors:
            raise ValidationError(errors)

    @property
    def hf_url(self) -> str:
        return f"https://huggingface.co/{self.hf_repo_id}" if self.hf_repo_id else ""


class Budget(models.Model):
    """What the program, or one organization in it, may spend over the cycle, in the program's currency or in US
    dollars; the other is read at the program's exchange rate. Alerts fire at `alert_percents` of the budget spent,
    and when the forecast to the end of the cycle passes the budget (`alert_on_forecast`), as AWS Budgets do."""

    class Currency(models.TextChoices):
        JPY = "JPY", _("Japanese yen (JPY)")
        USD = "USD", _("US dollars (USD)")

    program = models.ForeignKey(Program, on_delete=models.PROTECT, related_name="budgets", verbose_name=_("program"))
    organization = models.ForeignKey(
        Organization,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="budgets",
        verbose_name=_("organization"),
        help_text=_("Empty: the whole program's budget."),
    )
    amount = models.DecimalField(
        _("amount"), max_digits=16, decimal_places=2, validators=[MinValueValidator(Decimal("0.01"))]
    )
    currency = models.CharField(_("currency"), max_length=3, choices=Currency.choices, default=Currency.JPY)
    alert_percents = models.JSONField(
        _("alert at percent spent"), default=list, blank=True, help_text=_("e.g. 80, 100")
    )
    alert_on_forecast = models.BooleanField(_("alert when the forecast passes the budget"), default=True)
    note = models.CharField(_("source"), max_length=200, blank=True, help_text=_("e.g. the funding agreement"))
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.PROTECT, null=True, blank=True, related_name="+", verbose_name=_("set by")
    )
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["program", "organization__name"]
        verbose_name = _("budget")
        verbose_name_plural = _("budgets")
        constraints = [
            models.UniqueConstraint(fields=["program", "organization"], name="one_budget_per_organization"),
            models.UniqueConstraint(
                fields=["program"], condition=Q(organization__isnull=True), name="one_budget_per_program"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.organization or self.program}: {self.amount} {self.currency}"


class BudgetAlert(models.Model):
    """A threshold a budget crossed: fired once (one open alert per budget, kind and percent), mailed, shown on the
    landing page until the budget or its thresholds change and the figure is under it (workloads.outcomes.alerts)."""

    class Kind(models.TextChoices):
        SPENT = "spent", _("Spent")
        FORECAST = "forecast", _("Forecast")

    budget = models.ForeignKey(Budget, on_delete=models.CASCADE, related_name="alerts", verbose_name=_("budget"))
    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, null=True, blank=True, related_name="+", verbose_name=_("organization")
    )
    kind = models.CharField(_("kind"), max_length=16, choices=Kind.choices)
    percent = models.PositiveIntegerField(_("percent"))
    spent_micro_usd = models.BigIntegerField(_("spent (micro-USD)"))
    forecast_micro_usd = models.BigIntegerField(_("forecast (micro-USD)"), null=True, blank=True)
    budget_micro_usd = models.BigIntegerField(_("budget (micro-USD)"))
    fired_at = models.DateTimeField(_("fired at"), auto_now_add=True)
    mailed_at = models.DateTimeField(_("mailed at"), null=True, blank=True)
    cleared_at = models.DateTimeField(_("cleared at"), null=True, blank=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["-fired_at", "-pk"]
        verbose_name = _("budget alert")
        verbose_name_plural = _("budget alerts")
        constraints = [
            models.UniqueConstraint(
                fields=["budget", "kind", "percent"], condition=Q(cleared_at__isnull=True), name="one_open_alert"
            ),
        ]

    def __str__(self) -> str:
        return self.text

    @property
    def text(self) -> str:
        """What it says, in the active language (workloads.outcomes.texts)."""
        return alert_text(self)


class Report(models.Model):
    """A report the funding body reads: the program's or one organization's, for a month or the whole cycle, in one
    language, as generated at `generated_at` (workloads.outcomes.reports). Generated again, it is replaced: one per
    program, organization, kind, first day and language. The files are kept in the database, so backups hold them."""

    class Kind(models.TextChoices):
        MONTHLY = "monthly", pgettext_lazy("report kind", "Monthly report")
        CYCLE = "cycle", pgettext_lazy("report kind", "End-of-cycle report")

    program = models.ForeignKey(Program, on_delete=models.PROTECT, related_name="reports", verbose_name=_("program"))
    organization = models.ForeignKey(
        Organization,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="reports",
        verbose_name=_("organization"),
    )
    kind = models.CharField(_("kind"), max_length=16, choices=Kind.choices)
    first_day = models.DateField(_("first day"))
    last_day = models.DateField(_("last day"))
    language = models.CharField(_("language"), max_length=8, choices=settings.LANGUAGES)
    generated_at = models.DateTimeField(_("generated at"))
    xlsx = models.BinaryField(_("XLSX"))
    pdf = models.BinaryField(_("PDF"), null=True, blank=True)
    pdf_error = models.CharField(_("why there is no PDF"), max_length=500, blank=True)
    mailed_at = models.DateTimeField(_("mailed at"), null=True, blank=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["-first_day", "organization__name", "language", "pk"]
        verbose_name = _("report")
        verbose_name_plural = _("reports")
        constraints = [
            models.UniqueConstraint(
                fields=["program", "organization", "kind", "first_day", "language"], name="one_report_per_period"
            ),
            models.UniqueConstraint(
                fields=["program", "kind", "first_day", "language"],
                condition=Q(organization__isnull=True),
                name="one_program_report_per_period",
            ),
        ]

    def __str__(self) -> str:
        whose = self.organization or self.program
        return f"{whose} {self.get_kind_display()} {self.first_day:%Y-%m} ({self.language})"

    @property
    def file_stem(self) -> str:
        whose = self.organization.slug if self.organization else self.program.slug
        span = f"{self.first_day:%Y-%m}" if self.kind == self.Kind.MONTHLY else f"cycle-{self.first_day:%Y-%m-%d}"
        return f"report-{whose}-{span}-{self.language}"


class ReportRecipient(models.Model):
    """Who the program mails its reports to, in which language: the program's reports (no organization) or one
    organization's."""

    program = models.ForeignKey(Program, on_delete=models.CASCADE, related_name="+", verbose_name=_("program"))
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, null=True, blank=True, related_name="+", verbose_name=_("organization")
    )
    email = models.EmailField(_("email"))
    language = models.CharField(_("language"), max_length=8, choices=settings.LANGUAGES, default="ja")

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["organization__name", "email"]
        verbose_name = _("report recipient")
        verbose_name_plural = _("report recipients")
        constraints = [
            models.UniqueConstraint(fields=["program", "organization", "email"], name="one_recipient_per_report"),
            models.UniqueConstraint(
                fields=["program", "email"], condition=Q(organization__isnull=True), name="one_program_recipient"
            ),
        ]

    def __str__(self) -> str:
        return self.email


class CycleReview(models.Model):
    """An organization's review of its cycle (ColdFront's project review): before the program ends, one of its
    admins confirms that its members, milestones and deliverables are right. Reminders go to its admins until it
    is done (workloads.outcomes.review)."""

    program = models.ForeignKey(Program, on_delete=models.PROTECT, related_name="+", verbose_name=_("program"))
    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="cycle_reviews", verbose_name=_("organization")
    )
    confirmed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("confirmed by"),
    )
    confirmed_at = models.DateTimeField(_("confirmed at"), null=True, blank=True)
    comment = models.TextField(_("comment"), blank=True, max_length=FREE_TEXT_MAX)
    reminded_at = models.DateTimeField(_("last reminded at"), null=True, blank=True)
    reminders = models.PositiveIntegerField(_("reminders sent"), default=0)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["organization__name"]
        verbose_name = _("cycle review")
        verbose_name_plural = _("cycle reviews")
        constraints = [
            models.UniqueConstraint(fields=["program", "organization"], name="one_cycle_review_per_organization"),
        ]

    def __str__(self) -> str:
        return f"{self.organization} · {self.program}"
