"""Weekly review forms: the meeting record, and an action item (which may open a case)."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model
from django.utils.translation import gettext_lazy as _

from portal.forms import DateInput
from tenants.access import program_staff_users
from tenants.cycle import IN_CYCLE
from tenants.models import Organization
from workloads.support.models import SupportCase

User = get_user_model()


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
        self.fields["attendees"].queryset = program_staff_users()


class ActionItemForm(forms.Form):
    text = forms.CharField(label=_("Action"), max_length=500)
    organization = forms.ModelChoiceField(
        label=_("Organization"), queryset=Organization.objects.none(), required=False, empty_label=_("program-wide")
    )
    owner = forms.ModelChoiceField(label=_("Owner"), queryset=User.objects.none(), required=False)
    due_on = forms.DateField(label=_("Due"), required=False, widget=DateInput, validators=[IN_CYCLE])
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
        self.fields["owner"].queryset = program_staff_users()
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
