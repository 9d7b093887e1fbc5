"""Every page of the workloads app, one namespace per capability: records:, training:, support:, review:, clusters:,
usage:, jobs:, health:, validation:, reporting:, outcomes:; the program's landing page (workloads.program) has none."""

from django.urls import include, path

urlpatterns = [
    path("", include("workloads.records.urls")),
    path("", include("workloads.training.urls")),
    path("", include("workloads.support.urls")),
    path("", include("workloads.review.urls")),
    path("", include("workloads.clusters.urls")),
    path("", include("workloads.usage.urls")),
    path("", include("workloads.jobs.urls")),
    path("", include("workloads.health.urls")),
    path("", include("workloads.validation.urls")),
    path("", include("workloads.reporting.urls")),
    path("", include("workloads.outcomes.urls")),
    path("", include("workloads.program.urls")),
]
