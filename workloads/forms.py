"""Forms parse what people type; workloads.services decides what is allowed and writes it."""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from tenants.estimate import MAX_PARAMETERS, MAX_TOKENS
from tenants.forms import BILLION, in_billions
from tenants.models import Allocation, Organization
from workloads.models import MAX_PARALLEL_DEGREE, SupportCase, Workload

User = get_user_model()


class DateInput(forms.DateInput):
    input_type = "date"


def staff_users():
    return User.objects.filter(staff_role__isnull=False, is_active=True).order_by("username")


def apply_errors(form: forms.Form, error: ValidationError, aliases: dict[str, str] | None = None) -> None:
    """Show a service's ValidationError on the form: on the field it names (or the form field that
    stands for that model field), else at the top of the form."""
    aliases = aliases or {}
    if not hasattr(error, "error_dict"):
        form.add_error(None, error)
        return
    for name, messages in error.message_dict.items():
        target = aliases.get(name, name)
        form.add_error(target if target in form.fields else None, messages)


class BillionsField(forms.DecimalField):
    """A count typed in billions, as people talk about model sizes and token budgets (405, 0.5, 15000)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("min_value", Decimal("0.001"))
        super().__init__(max_digits=15, decimal_places=3, **kwargs)

    def clean(self, value):
        number = super().clean(value)
        return None if number is None else int(number * BILLION)


class AllocationChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, allocation: Allocation) -> str:
        return (
            f"#{allocation.pk} · {allocation.instance_count} × {allocation.pool.instance_type} · "
            f"{allocation.pool.region} · {allocation.starts_on:%Y-%m-%d} – {allocation.ends_on:%Y-%m-%d} "
            f"({allocation.get_status_display()})"
        )


class WorkloadForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=200)
    phase = forms.ChoiceField(label=_("Phase"), choices=Workload.Phase.choices)
    status = forms.ChoiceField(label=_("Status"), choices=Workload.Status.choices, initial=Workload.Status.PLANNED)
    model_name = forms.CharField(
        label=_("Model name"), max_length=200, required=False, help_text=_("For example: Sakura-LM 70B v2")
    )
    architecture = forms.ChoiceField(label=_("Architecture"), choices=Workload.Architecture.choices)
    parameter_count = BillionsField(label=_("Parameters (billions)"), max_value=MAX_PARAMETERS / BILLION)
    active_parameter_count = BillionsField(
        label=_("Active parameters (billions)"),
        max_value=MAX_PARAMETERS / BILLION,
        required=False,
        help_text=_("Mixture-of-experts models only."),
    )
    target_tokens = BillionsField(
        label=_("Target tokens (billions)"),
        max_value=MAX_TOKENS / BILLION,
        required=False,
        help_text=_("15 trillion tokens: 15000."),
    )
    framework = forms.ChoiceField(label=_("Framework"), choices=Workload.Framework.choices)
    tensor_parallel = forms.IntegerField(
        label=_("Tensor parallel"), min_value=1, max_value=MAX_PARALLEL_DEGREE, initial=1
    )
    pipeline_parallel = forms.IntegerField(
        label=_("Pipeline parallel"), min_value=1, max_value=MAX_PARALLEL_DEGREE, initial=1
    )
    data_parallel = forms.IntegerField(label=_("Data parallel"), min_value=1, max_value=MAX_PARALLEL_DEGREE, initial=1)
    expert_parallel = forms.IntegerField(
        label=_("Expert parallel"), min_value=1, max_value=MAX_PARALLEL_DEGREE, initial=1
    )
    cluster_type = forms.ChoiceField(label=_("Cluster type"), choices=Workload.ClusterType.choices)
    storage = forms.ChoiceField(label=_("Storage"), choices=Workload.Storage.choices)
    allocation = AllocationChoiceField(
        label=_("Allocation"), queryset=Allocation.objects.none(), required=False, empty_label=_("none")
    )
    notes = forms.CharField(label=_("Notes"), widget=forms.Textarea(attrs={"rows": 4}), required=False)

    def __init__(self, *args, organization: Organization, workload: Workload | None = None, **kwargs):
        if workload is not None and "initial" not in kwargs:
            kwargs["initial"] = self.initial_for(workload)
        super().__init__(*args, **kwargs)
        # Only this organization's allocations can be linked; another org's id is "not one of the choices".
        self.fields["allocation"].queryset = (
            Allocation.objects.for_org(organization).select_related("pool__instance_type").order_by("starts_on", "pk")
        )

    @staticmethod
    def initial_for(workload: Workload) -> dict:
        initial = {name: getattr(workload, name) for name in WorkloadForm.base_fields}
        for name in ("parameter_count", "active_parameter_count", "target_tokens"):
            initial[name] = in_billions(getattr(workload, name))
        initial["allocation"] = workload.allocation_id
        return initial

    @property
    def changes(self) -> dict:
        """The model fields to write (all of them for a new record)."""
        data = dict(self.cleaned_data)
        for name in ("model_name", "notes"):
            data[name] = data.get(name, "").strip()
        return data


class CaseForm(forms.Form):
    title = forms.CharField(label=_("Title"), max_length=200)
    category = forms.ChoiceField(label=_("Category"), choices=SupportCase.Category.choices)
    severity = forms.ChoiceField(label=_("Severity"), choices=SupportCase.Severity.choices, initial="s3")
    workload = forms.ModelChoiceField(
        label=_("Workload"), queryset=Workload.objects.none(), required=False, empty_label=_("none")
    )
    description = forms.CharField(
        label=_("Description"),
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text=_("What happened, since when, job ids, instance ids, error messages."),
    )

    def __init__(self, *args, organization: Organization, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["workload"].queryset = Workload.objects.for_org(organization).order_by("name")


class CommentForm(forms.Form):
    body = forms.CharField(label=_("Comment"), widget=forms.Textarea(attrs={"rows": 4}))
    internal = forms.BooleanField(
        label=_("Internal note (program staff only, never shown or mailed to the tenant)"), required=False
    )

    def __init__(self, *args, staff: bool, **kwargs):
        super().__init__(*args, **kwargs)
        if not staff:
            # A tenant never gets the box; a crafted post with it is refused by the service (403).
            self.fields["internal"].widget = forms.HiddenInput()


class CaseUpdateForm(forms.Form):
    """Status (reopening included), severity, assignee and the linked workload, with an optional comment."""

    status = forms.ChoiceField(label=_("Status"), choices=SupportCase.Status.choices)
    severity = forms.ChoiceField(label=_("Severity"), choices=SupportCase.Severity.choices)
    assignee = forms.ModelChoiceField(
        label=_("Assignee"), queryset=User.objects.none(), required=False, empty_label=_("unassigned")
    )
    workload = forms.ModelChoiceField(
        label=_("Workload"), queryset=Workload.objects.none(), required=False, empty_label=_("none")
    )
    comment = forms.CharField(
        label=_("Comment with the change (optional)"), widget=forms.Textarea(attrs={"rows": 2}), required=False
    )

    def __init__(self, *args, case: SupportCase, staff: bool, **kwargs):
        kwargs.setdefault(
            "initial",
            {
                "status": case.status,
                "severity": case.severity,
                "assignee": case.assignee_id,
                "workload": case.workload_id,
            },
        )
        super().__init__(*args, **kwargs)
        self.fields["workload"].queryset = Workload.objects.for_org(case.organization).order_by("name")
        statuses = SupportCase.Status.choices
        if not staff:
            # What a tenant can do from here: resolve or close an active case, reopen a finished one.
            Status = SupportCase.Status
            allowed = {case.status, Status.RESOLVED, Status.CLOSED} if case.is_active else {case.status, Status.OPEN}
            if case.status == Status.RESOLVED:
                allowed.add(Status.CLOSED)
            statuses = [(k, label) for k, label in statuses if k in allowed]
            # Assigning is the program team's job: the field is not offered (and the service refuses it).
            del self.fields["assignee"]
        else:
            self.fields["assignee"].queryset = staff_users()
        self.fields["status"].choices = statuses

    @property
    def changes(self) -> dict:
        """Only what the person changed, so an untouched field records no event."""
        return {name: self.cleaned_data[name] for name in self.changed_data if name != "comment"}


class ReviewMeetingForm(forms.Form):
    attendees = forms.ModelMultipleChoiceField(
        label=_("Attendees"), queryset=User.objects.none(), required=False, widget=forms.CheckboxSelectMultiple
    )
    other_attendees = forms.CharField(
        label=_("Other attendees"), max_length=500, required=False, help_text=_("Names, separated by commas.")
    )
    minutes = forms.CharField(label=_("Minutes"), widget=forms.Textarea(attrs={"rows": 8}), required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["attendees"].queryset = staff_users()


class ActionItemForm(forms.Form):
    text = forms.CharField(label=_("Action"), max_length=500)
    organization = forms.ModelChoiceField(
        label=_("Organization"), queryset=Organization.objects.none(), required=False, empty_label=_("program-wide")
    )
    owner = forms.ModelChoiceField(label=_("Owner"), queryset=User.objects.none(), required=False)
    due_on = forms.DateField(label=_("Due"), required=False, widget=DateInput)
    case = forms.ModelChoiceField(
        label=_("Link case number"),
        queryset=SupportCase.objects.none(),
        required=False,
        widget=forms.NumberInput(attrs={"min": 1}),
        error_messages={"invalid_choice": _("There is no case with this number.")},
    )
    open_case = forms.BooleanField(label=_("Open a new case for this action"), required=False)
    case_title = forms.CharField(label=_("New case title"), max_length=200, required=False)
    case_category = forms.ChoiceField(
        label=_("New case category"), choices=SupportCase.Category.choices, required=False
    )
    case_severity = forms.ChoiceField(
        label=_("New case severity"), choices=SupportCase.Severity.choices, initial="s3", required=False
    )

    def __init__(self, *args, organizations, cases, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["organization"].queryset = organizations
        self.fields["owner"].queryset = staff_users()
        self.fields["case"].queryset = cases

    def clean(self):
        data = super().clean()
        if data.get("open_case") and not data.get("case_title"):
            self.add_error("case_title", _("Give the new case a title."))
        return data

    @property
    def new_case(self) -> dict | None:
        data = self.cleaned_data
        if not data.get("open_case"):
            return None
        return {
            "title": data["case_title"],
            "category": data.get("case_category") or SupportCase.Category.OTHER,
            "severity": data.get("case_severity") or SupportCase.Severity.S3,
        }
