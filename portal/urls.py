from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from portal.metrics.views import metrics
from portal.views import healthz
from tenants import api as tenants_api
from tenants.capacity import api as capacity_api
from tenants.capacity.planning import api as planning_api
from tenants.logins.views import LoginView
from tenants.members import api as members_api
from tenants.members import views as members_views
from tenants.service_accounts import api as service_accounts_api
from tenants.sso.views import SignOutView
from tenants.tokens import api as tokens_api
from workloads.clusters import api as clusters_api
from workloads.health import api as health_api
from workloads.jobs import api as jobs_api
from workloads.outcomes import api as outcomes_api
from workloads.records import api as records_api
from workloads.review import api as review_api
from workloads.support import api as support_api
from workloads.training import api as training_api
from workloads.usage import api as usage_api
from workloads.validation import api as validation_api

router = DefaultRouter()
router.register("organizations", tenants_api.OrganizationViewSet, basename="organization")
router.register(
    r"organizations/(?P<org_slug>[^/.]+)/members", members_api.MemberViewSet, basename="organization-member"
)
router.register(
    r"organizations/(?P<org_slug>[^/.]+)/invitations", members_api.InvitationViewSet, basename="organization-invitation"
)
router.register(
    r"organizations/(?P<org_slug>[^/.]+)/service-accounts",
    service_accounts_api.ServiceAccountViewSet,
    basename="organization-service-account",
)
router.register(
    r"organizations/(?P<org_slug>[^/.]+)/service-accounts/(?P<service_account_id>[^/.]+)/tokens",
    service_accounts_api.ServiceAccountTokenViewSet,
    basename="organization-service-account-token",
)
router.register("instance-types", tenants_api.InstanceTypeViewSet, basename="instance-type")
router.register("pools", capacity_api.CapacityPoolViewSet, basename="pool")
router.register("capacity-requests", capacity_api.CapacityRequestViewSet, basename="capacity-request")
router.register("allocations", capacity_api.AllocationViewSet, basename="allocation")
router.register("capacity-plans", planning_api.CapacityPlanViewSet, basename="capacity-plan")
router.register("workloads", records_api.WorkloadViewSet, basename="workload")
router.register("support-cases", support_api.SupportCaseViewSet, basename="support-case")
router.register("review-meetings", review_api.ReviewMeetingViewSet, basename="review-meeting")
router.register("action-items", review_api.ActionItemViewSet, basename="action-item")
router.register("clusters", clusters_api.ClusterViewSet, basename="cluster")
router.register("jobs", jobs_api.JobViewSet, basename="job")
router.register("health-events", health_api.HealthEventViewSet, basename="health-event")
router.register("nccl-validations", validation_api.NcclValidationViewSet, basename="nccl-validation")
router.register("auth/tokens", tokens_api.ApiTokenViewSet, basename="token")
router.register("usage", usage_api.UsageViewSet, basename="usage")
router.register("rate-card", usage_api.RateCardViewSet, basename="rate-card")
router.register("milestones", outcomes_api.MilestoneViewSet, basename="milestone")
router.register("deliverables", outcomes_api.DeliverableViewSet, basename="deliverable")
router.register("budgets", outcomes_api.BudgetViewSet, basename="budget")
router.register("reports", outcomes_api.ReportViewSet, basename="report")

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics, name="metrics"),  # Prometheus, with its bearer token (docs/operations/metrics.md)
    path("login/", LoginView.as_view(), name="login"),
    path("logout/", SignOutView.as_view(), name="logout"),  # and at the provider, for who signed in there
    path("", include("tenants.sso.urls")),
    path("", include("tenants.scim.urls")),  # SCIM 2.0 provisioning: its clients' bearer tokens, no session
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
    path("api/v1/auth/token/", tokens_api.ObtainTokenView.as_view(), name="api-token"),
    path("api/v1/estimate/", capacity_api.EstimateView.as_view(), name="api-estimate"),
    # A cluster's reports (its reporter token or a member's): jobs, GPU health, interconnect checks.
    path("api/v1/clusters/<int:pk>/jobs/ingest/", jobs_api.JobIngestView.as_view(), name="cluster-jobs-ingest"),
    path(
        "api/v1/clusters/<int:pk>/health/ingest/", health_api.HealthIngestView.as_view(), name="cluster-health-ingest"
    ),
    path("api/v1/clusters/<int:pk>/nccl-tests/", validation_api.NcclIngestView.as_view(), name="cluster-nccl-tests"),
    path("api/v1/clusters/<int:pk>/progress/", training_api.ClusterProgressView.as_view(), name="cluster-progress"),
    path("api/v1/workloads/<int:pk>/progress/", training_api.WorkloadProgressView.as_view(), name="workload-progress"),
    path("api/v1/", include(router.urls)),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view: Swagger UI's start-up script is a file (?script); the Content-Security-Policy refuses inline ones.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include("tenants.logins.urls")),
    path("", include("tenants.twofactor.urls")),
    path("", include("tenants.tokens.urls")),
    path("", include("tenants.members.urls")),
    path("", include("tenants.service_accounts.urls")),
    path("invitations/<str:key>/", members_views.accept, name="invitation"),
    path("", include("tenants.urls")),
    path("", include("workloads.urls")),
]

handler400 = "portal.views.bad_request"
handler403 = "portal.views.permission_denied"
handler404 = "portal.views.page_not_found"
handler500 = "portal.views.server_error"
