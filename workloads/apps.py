from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class WorkloadsConfig(AppConfig):
    name = "workloads"
    verbose_name = _("Workloads and clusters")

    def ready(self):
        # Imported here, once the models are loaded (Django's rule for signal receivers).
        from tenants import audit_labels
        from tenants.capacity import pricing, revocation, usage
        from tenants.signals import allocation_granted, allocation_revoked
        from workloads.clusters import services as clusters
        from workloads.outcomes import services as outcomes
        from workloads.reporting import services as reporting
        from workloads.usage import allocations, rates, receivers

        # Signals and a registered reader, not calls: allocations live in tenants, which must never import
        # workloads; workloads reacts to them and tells the capacity pages what allocations are used for.
        allocation_revoked.connect(
            clusters.delete_clusters_of_revoked_allocation, dispatch_uid="delete-clusters-on-revoke"
        )
        allocation_revoked.connect(receivers.on_allocation_revoked, dispatch_uid="usage-on-revoke")
        allocation_granted.connect(receivers.on_allocation_granted, dispatch_uid="usage-on-grant")
        usage.register(allocations.READER)
        pricing.register(rates.estimate_rates)  # estimates price at the rate card in force, as usage does
        revocation.register(clusters.doomed_clusters)
        # The audit trail names the cluster actions workloads records and their details, links the cluster's page.
        audit_labels.register(
            actions={**clusters.AUDIT_ACTIONS, **reporting.AUDIT_ACTIONS, **outcomes.AUDIT_ACTIONS},
            pages={"cluster": "clusters:detail", "milestone": "outcomes:milestone"},
            details={"cluster": {**clusters.AUDIT_DETAILS, **reporting.AUDIT_DETAILS}},
        )
