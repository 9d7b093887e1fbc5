"""The cluster create form: parses what people type; workloads.clusters.services decides what is allowed."""

from __future__ import annotations

from django import forms
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from portal.cloud import parallelcluster
from tenants.models import Allocation
from workloads.clusters.models import CLUSTER_NAME, Cluster, validate_lustre_capacity
from workloads.records.models import Workload

# A workload's planned cluster type suggests the kind of the cluster made from it.
KIND_FOR_WORKLOAD = {
    Workload.ClusterType.HYPERPOD_SLURM: Cluster.Kind.HYPERPOD_SLURM,
    Workload.ClusterType.HYPERPOD_EKS: Cluster.Kind.HYPERPOD_EKS,
    Workload.ClusterType.PARALLELCLUSTER_SLURM: Cluster.Kind.PARALLELCLUSTER,
}


class AllocationField(forms.ModelChoiceField):
    def label_from_instance(self, allocation: Allocation) -> str:
        return (
            f"A-{allocation.pk} · {allocation.instance_count} × {allocation.pool.instance_type} · "
            f"{allocation.pool.region} · {allocation.starts_on:%Y-%m-%d} – {allocation.ends_on:%Y-%m-%d}"
        )


class ClusterForm(forms.Form):
    allocation = AllocationField(queryset=Allocation.objects.none(), label=_("Allocation"))
    workload = forms.ModelChoiceField(
        queryset=Workload.objects.none(), required=False, label=_("Workload"), empty_label=_("(none)")
    )
    name = forms.CharField(
        label=_("Cluster name"),
        validators=[CLUSTER_NAME],  # its message covers the length too: one error, not two
        widget=forms.TextInput(attrs={"maxlength": 40}),
        help_text=_("Lowercase letters, digits and hyphens."),
    )
    kind = forms.ChoiceField(label=_("Kind"), choices=Cluster.Kind.choices, initial=Cluster.Kind.HYPERPOD_SLURM)
    instance_count = forms.IntegerField(label=_("Worker instances"), min_value=1, max_value=2000)
    threads_per_core = forms.TypedChoiceField(
        label=_("Threads per core"),
        choices=[(1, _("1 (hyper-threading off, usual for training)")), (2, _("2"))],
        coerce=int,
        initial=1,
    )
    storage = forms.ChoiceField(label=_("Shared storage"), choices=Cluster.Storage.choices)
    s3_data_repository_path = forms.CharField(
        label=_("S3 data repository"),
        required=False,
        validators=Cluster._meta.get_field("s3_data_repository_path").validators,
        help_text=_("New FSx for Lustre only: linked at /fsx/data, e.g. s3://my-corpus/ja/."),
    )
    fsx_file_system_id = forms.CharField(label=_("Existing file system id"), required=False, max_length=64)
    storage_capacity_gib = forms.IntegerField(
        label=_("Storage capacity (GiB)"),
        initial=1200,
        validators=[validate_lustre_capacity],
        help_text=_("New FSx for Lustre only: 1,200, 2,400 or a multiple of 2,400 GiB."),
    )

    def __init__(self, *args, allocations, workloads, **kwargs):
        super().__init__(*args, **kwargs)
        # Only the org's own active allocations and workloads can be chosen at all.
        self.fields["allocation"].queryset = allocations
        self.fields["workload"].queryset = workloads
        if not parallelcluster.is_installed():
            self.fields["kind"].choices = [
                (kind, format_lazy("{} ({})", label, _("not installed on this portal")))
                if kind == Cluster.Kind.PARALLELCLUSTER
                else (kind, label)
                for kind, label in Cluster.Kind.choices
            ]
