from django.contrib import admin

from workloads.models import (
    ActionItem,
    CaseEvent,
    CloudCallTally,
    Cluster,
    ClusterEvent,
    ClusterInstanceGroup,
    HealthEvent,
    Job,
    NcclBaseline,
    NcclValidation,
    OrgCloudSettings,
    PrometheusSource,
    ReporterToken,
    ReviewMeeting,
    SupportCase,
    WorkerHeartbeat,
    Workload,
    WorkloadChange,
)

# --- Workloads and support cases -------------------------------------------------------
# View-only: every write goes through the services (workloads.records, .support), which keep the field history
# and the case events and send the notifications. An admin edit would bypass all three.


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class WorkloadChangeInline(ReadOnlyInline):
    model = WorkloadChange
    fields = ["changed_at", "actor", "kind", "field", "old_value", "new_value"]
    readonly_fields = fields
    ordering = ["-changed_at", "-pk"]


@admin.register(Workload)
class WorkloadAdmin(ReadOnlyAdmin):
    list_display = [
        "name",
        "organization",
        "phase",
        "parameter_count",
        "framework",
        "cluster_type",
        "status",
        "updated_at",
    ]
    list_filter = ["status", "phase", "framework", "cluster_type", "storage", "organization"]
    list_select_related = ["organization"]
    search_fields = ["name", "model_name", "organization__name"]
    inlines = [WorkloadChangeInline]


class CaseEventInline(ReadOnlyInline):
    model = CaseEvent
    fields = ["created_at", "actor", "kind", "internal", "body", "old_value", "new_value", "notified_at"]
    readonly_fields = fields
    ordering = ["created_at", "pk"]


@admin.register(SupportCase)
class SupportCaseAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "organization", "category", "severity", "status", "assignee", "created_at", "updated_at"]
    list_filter = ["status", "severity", "category", "organization"]
    list_select_related = ["organization", "assignee"]
    search_fields = ["title", "organization__name"]
    inlines = [CaseEventInline]


class ActionItemInline(ReadOnlyInline):
    model = ActionItem
    fields = ["text", "organization", "owner", "due_on", "case", "status", "done_at"]
    readonly_fields = fields


@admin.register(ReviewMeeting)
class ReviewMeetingAdmin(ReadOnlyAdmin):
    list_display = ["iso_week", "week_start", "created_by", "updated_at"]
    inlines = [ActionItemInline]


# --- Clusters ---------------------------------------------------------------------------
# The program team links an org's account for clusters here; clusters themselves change only through
# workloads.clusters (compare-and-set lifecycle), so they are view-only.


@admin.register(OrgCloudSettings)
class OrgCloudSettingsAdmin(admin.ModelAdmin):
    list_display = ["organization", "lifecycle_s3_uri", "execution_role_arn"]
    list_select_related = ["organization"]


class ClusterGroupInline(ReadOnlyInline):
    model = ClusterInstanceGroup
    fields = ["name", "role", "instance_type", "instance_count"]


class ClusterEventInline(ReadOnlyInline):
    model = ClusterEvent
    fields = ["created_at", "from_status", "to_status", "message", "actor"]
    readonly_fields = fields


@admin.register(Cluster)
class ClusterAdmin(ReadOnlyAdmin):
    list_display = ["name", "organization", "kind", "region", "status", "retries", "created_at", "last_polled_at"]
    list_filter = ["status", "kind", "region"]
    list_select_related = ["organization"]
    search_fields = ["name", "cloud_name", "organization__name"]
    inlines = [ClusterGroupInline, ClusterEventInline]


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(ReadOnlyAdmin):
    """Each queue's last heartbeat and the worker that ran it (what /healthz reports, with the host)."""

    list_display = ["queue", "worker", "sent_at", "ran_at"]


@admin.register(CloudCallTally)
class CloudCallTallyAdmin(ReadOnlyAdmin):
    """AWS calls per endpoint and minute (what /healthz?deep=1 reads, with the whole account id)."""

    list_display = ["minute", "service", "region", "account", "calls", "failures", "last_failure"]
    list_filter = ["service", "region"]
    search_fields = ["account"]


# --- What clusters report --------------------------------------------------------------------------------
# Prometheus sources are set up here by the program team; the reports themselves (jobs, health events, nccl-tests
# runs) come from the clusters through the services and are view-only. NCCL baselines are edited on the health
# rules page, where each change records who made it.


@admin.register(PrometheusSource)
class PrometheusSourceAdmin(admin.ModelAdmin):
    list_display = ["name", "organization", "url", "sigv4_region", "enabled", "last_polled_at", "last_error"]
    list_filter = ["enabled"]
    list_select_related = ["organization"]
    fields = ["name", "organization", "url", "sigv4_region", "cluster_label", "enabled"]


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    list_display = ["job_id", "name", "cluster", "organization", "user", "state", "started_at", "accelerators"]
    list_filter = ["state", "organization"]
    list_select_related = ["cluster", "organization"]
    search_fields = ["job_id", "name", "user", "cluster__name"]


@admin.register(HealthEvent)
class HealthEventAdmin(ReadOnlyAdmin):
    list_display = ["kind", "instance_id", "gpu", "code", "severity", "cluster", "observed_at", "resolved_at", "case"]
    list_filter = ["severity", "kind", "source"]
    list_select_related = ["cluster"]
    search_fields = ["instance_id", "cluster__name", "message"]


@admin.register(NcclValidation)
class NcclValidationAdmin(ReadOnlyAdmin):
    list_display = ["cluster", "organization", "nodes", "peak_busbw_gbps", "verdict", "submitted_at"]
    list_filter = ["verdict"]
    list_select_related = ["cluster", "organization"]
    exclude = ["log"]


@admin.register(NcclBaseline)
class NcclBaselineAdmin(ReadOnlyAdmin):
    list_display = ["instance_type", "nodes", "busbw_gbps", "size_bytes", "min_fraction", "updated_by", "updated_at"]


@admin.register(ReporterToken)
class ReporterTokenAdmin(ReadOnlyAdmin):
    list_display = ["name", "prefix", "cluster", "organization", "created_at", "last_used_at", "revoked_at"]
    list_select_related = ["cluster", "organization"]
