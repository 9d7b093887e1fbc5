"""Forms of milestones, deliverables and budgets: they parse and narrow choices to the organization's own rows;
workloads.outcomes.services decides and writes."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from tenants.models import FREE_TEXT_MAX
from workloads.outcomes.models import EVIDENCE_MAX, Budget, Deliverable, Milestone
from workloads.outcomes.services import BUDGET_FIELDS, DELIVERABLE_FIELDS, MILESTONE_FIELDS, clean_percents
from workloads.records.models import Workload
from workloads.training.models import TrainingRun

DATE = forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")
LICENSES = ("apache-2.0", "mit", "cc-by-4.0", "cc-by-sa-4.0", "cc-by-nc-4.0", "llama3.1", "llama3.3", "gemma", "other")


class MilestoneForm(forms.ModelForm):
    # Start empty; __init__ narrows each to the organization's own rows.
    workload = forms.ModelChoiceField(
        Workload.objects.none(),
        required=False,
        label=Milestone._meta.get_field("workload").verbose_name,
        help_text=Milestone._meta.get_field("workload").help_text,
    )

    class Meta:
        model = Milestone
        fields = MILESTONE_FIELDS
        widgets = {"due_on": DATE, "description": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args, organization, **kwargs):
        kwargs.setdefault("instance", Milestone(organization=organization))
        super().__init__(*args, **kwargs)
        self.fields["workload"].queryset = Workload.objects.for_org(organization).order_by("name")


def _choice(model, field: str, queryset) -> forms.ModelChoiceField:
    return forms.ModelChoiceField(queryset, required=False, label=model._meta.get_field(field).verbose_name)


class DeliverableForm(forms.ModelForm):
    # Start empty; __init__ narrows each to the organization's own rows.
    milestone = _choice(Deliverable, "milestone", Milestone.objects.none())
    run = _choice(Deliverable, "run", TrainingRun.objects.none())
    model = _choice(Deliverable, "model", Deliverable.objects.none())

    class Meta:
        model = Deliverable
        fields = DELIVERABLE_FIELDS
        widgets = {"released_on": DATE, "authors": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args, organization, **kwargs):
        kwargs.setdefault("instance", Deliverable(organization=organization))
        super().__init__(*args, **kwargs)
        self.fields["milestone"].queryset = Milestone.objects.for_org(organization)
        self.fields["run"].queryset = TrainingRun.objects.for_org(organization).order_by("name")
        self.fields["model"].queryset = Deliverable.objects.for_org(organization).filter(kind=Deliverable.Kind.MODEL)
        self.fields["license"].widget.attrs["list"] = "licenses"
        self.licenses = LICENSES


class ReportForm(forms.Form):
    evidence = forms.CharField(
        label=_("Evidence"),
        max_length=EVIDENCE_MAX,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("A link to the release, the report or the result, and a line on what it shows."),
    )


class DecisionForm(forms.Form):
    DECISIONS = (("confirm", _("Confirm it met")), ("return", _("Return it: not met yet")), ("drop", _("Drop it")))
    decision = forms.ChoiceField(label=_("Decision"), choices=DECISIONS)
    comment = forms.CharField(
        label=_("Comment"), required=False, max_length=FREE_TEXT_MAX, widget=forms.Textarea(attrs={"rows": 2})
    )


class BudgetForm(forms.ModelForm):
    alert_percents = forms.CharField(
        label=_("Alert at percent spent"), required=False, max_length=60, help_text=_("e.g. 80, 100; empty: none")
    )

    class Meta:
        model = Budget
        fields = BUDGET_FIELDS

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.is_bound:
            self.initial["alert_percents"] = ", ".join(str(p) for p in (self.instance.alert_percents or [80, 100]))

    def clean_alert_percents(self):
        try:
            return clean_percents(self.cleaned_data["alert_percents"])
        except ValidationError as error:  # the service names the field; here the field is the form's own
            raise ValidationError(error.message_dict["alert_percents"]) from None


class ReviewForm(forms.Form):
    comment = forms.CharField(
        label=_("Comment"),
        required=False,
        max_length=FREE_TEXT_MAX,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("Anything the program should know: a member who left, a milestone to amend."),
    )
