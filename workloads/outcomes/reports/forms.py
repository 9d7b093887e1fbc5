"""The reports page's forms: generating a report again, adding a recipient. Program managers only (the views
check); an organization is named by its slug, a field rather than a menu of every organization."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from tenants.access import visible_organizations
from tenants.models import Program
from workloads.outcomes.models import Report, ReportRecipient


class GenerateForm(forms.Form):
    kind = forms.ChoiceField(label=_("Kind"), choices=Report.Kind.choices)
    month = forms.DateField(
        label=_("Month"),
        input_formats=["%Y-%m"],
        required=False,
        widget=forms.DateInput(attrs={"type": "month"}, format="%Y-%m"),
        help_text=_("For a monthly report."),
    )
    organization = forms.SlugField(
        label=_("Organization"), required=False, help_text=_("Its slug; empty: the program's report.")
    )
    language = forms.ChoiceField(label=_("Language"), choices=Report._meta.get_field("language").choices)

    def __init__(self, *args, program: Program, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.program, self.user = program, user

    def clean_organization(self):
        slug = self.cleaned_data["organization"]
        if not slug:
            return None
        found = visible_organizations(self.user).filter(slug=slug).first()
        if found is None:
            raise ValidationError(_("No organization has this slug."))
        return found

    def clean(self):
        data = super().clean()
        if data.get("kind") == Report.Kind.MONTHLY:
            month = data.get("month")
            if month is None:
                self.add_error("month", _("Choose the month."))
            elif not (self.program.starts_on.replace(day=1) <= month <= self.program.ends_on):
                self.add_error("month", _("Choose a month of the program's cycle."))
        return data


class RecipientForm(forms.ModelForm):
    organization = forms.SlugField(
        label=_("Organization"), required=False, help_text=_("Empty: the program's reports.")
    )

    class Meta:
        model = ReportRecipient
        fields = ["email", "language"]

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_organization(self):
        slug = self.cleaned_data["organization"]
        if not slug:
            return None
        found = visible_organizations(self.user).filter(slug=slug).first()
        if found is None:
            raise ValidationError(_("No organization has this slug."))
        return found
