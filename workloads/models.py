"""Every model of the workloads app, for Django (which reads an app's models from here) and for admin.

The models live with their capability — records/, support/, review/, clusters/, health/, jobs/,
validation/, reporting/, usage/, training/ — and keep the
`workloads` app label, so their tables and migrations are unchanged. Code inside the app imports a model from
its own sub-package (`from workloads.clusters.models import Cluster`), never from here.
"""

from workloads.clusters.models import (
    CLUSTER_NAME,
    FSX_LUSTRE_MAX_GIB,
    S3_URI,
    Cluster,
    ClusterEvent,
    ClusterInstanceGroup,
    ClusterNode,
    OrgCloudSettings,
    validate_lustre_capacity,
)
from workloads.health.models import HealthEvent, PrometheusSource
from workloads.jobs.models import Job
from workloads.operations.models import CloudCallTally, WorkerHeartbeat
from workloads.outcomes.models import (
    Budget,
    BudgetAlert,
    CycleReview,
    Deliverable,
    Milestone,
    Report,
    ReportRecipient,
)
from workloads.records.models import (
    MAX_PARALLEL_DEGREE,
    STORAGE_SHORT,
    TOO_MANY_PARAMETERS,
    TOO_MANY_TOKENS,
    Workload,
    WorkloadChange,
)
from workloads.reporting.models import ReporterToken
from workloads.review.models import ActionItem, ReviewMeeting
from workloads.support.models import CaseEvent, SupportCase
from workloads.training.models import LogSource, ProgressHour, ProgressPoint, RunStart, TrainingRun
from workloads.usage.models import (
    BilledCost,
    ClusterUsageDay,
    DigestSent,
    NodeInterval,
    PoolUsageDay,
    RateCardEntry,
    SettledWeek,
    UsageDay,
    UsageDirtyDay,
    UsageRevision,
    UsageWeek,
)
from workloads.validation.models import NcclBaseline, NcclValidation

__all__ = [
    "CLUSTER_NAME",
    "FSX_LUSTRE_MAX_GIB",
    "MAX_PARALLEL_DEGREE",
    "S3_URI",
    "STORAGE_SHORT",
    "TOO_MANY_PARAMETERS",
    "TOO_MANY_TOKENS",
    "ActionItem",
    "BilledCost",
    "Budget",
    "BudgetAlert",
    "CaseEvent",
    "CloudCallTally",
    "CycleReview",
    "Deliverable",
    "Cluster",
    "ClusterEvent",
    "ClusterInstanceGroup",
    "ClusterNode",
    "ClusterUsageDay",
    "DigestSent",
    "HealthEvent",
    "LogSource",
    "Milestone",
    "Job",
    "NcclBaseline",
    "NcclValidation",
    "NodeInterval",
    "OrgCloudSettings",
    "PoolUsageDay",
    "ProgressHour",
    "ProgressPoint",
    "PrometheusSource",
    "RateCardEntry",
    "Report",
    "ReportRecipient",
    "ReporterToken",
    "ReviewMeeting",
    "RunStart",
    "SettledWeek",
    "SupportCase",
    "TrainingRun",
    "UsageDay",
    "UsageDirtyDay",
    "UsageRevision",
    "UsageWeek",
    "WorkerHeartbeat",
    "Workload",
    "WorkloadChange",
    "validate_lustre_capacity",
]
