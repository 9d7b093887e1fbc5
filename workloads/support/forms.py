"""Support case forms: open a case, comment, change status / severity / assignee / the linked workload, cluster
and node."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model
from django.db.models import Case, When
from django.utils.translation import gettext_lazy as _

from tenants.access import program_staff_users
from tenants.models import Organization
from workloads.clusters.models import Cluster
from workloads.records.models import Workload
from workloads.support.models import SupportCase

User = get_user_model()


class ClusterChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, cluster: Cluster) -> str:
        return f"{cluster.name} · {cluster.get_status_display()}"


def linkable_clusters(organization: Organization):
    """The clusters a case can name: all the organization's, the live ones first, deleted ones included (a case
    can be about a cluster that is gone)."""
    live_first = Case(When(status__in=Cluster.LIVE, then=0), default=1)
    return Cluster.objects.for_org(organization).order_by(live_first, "name", "pk")


class CaseLinks(forms.Form):
    """What a case is about: a workload, a cluster and one of its nodes, all of the case's organization."""

    workload = forms.ModelChoiceField(
        label=_("Workload"), queryset=Workload.objects.none(), required=False, empty_label=_("none")
    )
    cluster = ClusterChoiceField(
        label=_("Cluster"), queryset=Cluster.objects.none(), required=False, empty_label=_("none")
    )
    node = forms.CharField(
        label=_("Node"),
        max_length=255,
        required=False,
        help_text=_(
            "Instance id (i-0abc…) or host name (ip-10-1-0-7) of a node of the cluster, if the case is about one."
        ),
    )

    def offer_links_of(self, organization: Organization) -> None:
        self.fields["workload"].queryset = Workload.objects.for_org(organization).order_by("name")
        self.fields["cluster"].queryset = linkable_clusters(organization)


class CaseForm(CaseLinks):
    field_order = ["title", "category", "severity", "workload", "cluster", "node", "description"]

    title = forms.CharField(label=_("Title"), max_length=200)
    category = forms.ChoiceField(label=_("Category"), choices=SupportCase.Category.choices)
    severity = forms.ChoiceField(label=_("Severity"), choices=SupportCase.Severity.choices, initial="s3")
    description = forms.CharField(
        label=_("Description"),
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text=_("What happened, since when, job ids, instance ids, error messages."),
    )

    def __init__(self, *args, organization: Organization, **kwargs):
        super().__init__(*args, **kwargs)
        self.offer_links_of(organization)


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


class CaseUpdateForm(CaseLinks):
    """Status (reopening included), severity, assignee and the linked workload, cluster and node, with an optional
    comment."""

    field_order = ["status", "severity", "assignee", "workload", "cluster", "node", "comment"]

    status = forms.ChoiceField(label=_("Status"), choices=SupportCase.Status.choices)
    severity = forms.ChoiceField(label=_("Severity"), choices=SupportCase.Severity.choices)
    assignee = forms.ModelChoiceField(
        label=_("Assignee"), queryset=User.objects.none(), required=False, empty_label=_("unassigned")
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
                "cluster": case.cluster_id,
                "node": case.node.instance_id if case.node else "",
            },
        )
        super().__init__(*args, **kwargs)
        self.offer_links_of(case.organization)
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
            self.fields["assignee"].queryset = program_staff_users()
        self.fields["status"].choices = statuses

    @property
    def changes(self) -> dict:
        """Only what the person changed, so an untouched field records no event."""
        return {name: self.cleaned_data[name] for name in self.changed_data if name != "comment"}
