from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class WorkloadsConfig(AppConfig):
    name = "workloads"
    verbose_name = _("Workloads and clusters")

    def ready(self):
        from tenants.signals import allocation_revoked
        from workloads.cluster_services import delete_clusters_of_revoked_allocation

        allocation_revoked.connect(delete_clusters_of_revoked_allocation, dispatch_uid="delete-clusters-on-revoke")
