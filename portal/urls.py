from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.authtoken.views import obtain_auth_token
from rest_framework.routers import DefaultRouter

from portal.views import healthz
from tenants import api as tenants_api
from workloads import api as workloads_api
from workloads import cluster_api

router = DefaultRouter()
router.register("organizations", tenants_api.OrganizationViewSet, basename="organization")
router.register("instance-types", tenants_api.InstanceTypeViewSet, basename="instance-type")
router.register("pools", tenants_api.CapacityPoolViewSet, basename="pool")
router.register("capacity-requests", tenants_api.CapacityRequestViewSet, basename="capacity-request")
router.register("allocations", tenants_api.AllocationViewSet, basename="allocation")
router.register("workloads", workloads_api.WorkloadViewSet, basename="workload")
router.register("support-cases", workloads_api.SupportCaseViewSet, basename="support-case")
router.register("review-meetings", workloads_api.ReviewMeetingViewSet, basename="review-meeting")
router.register("action-items", workloads_api.ActionItemViewSet, basename="action-item")
router.register("clusters", cluster_api.ClusterViewSet, basename="cluster")

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
    path("api/v1/auth/token/", obtain_auth_token, name="api-token"),
    path("api/v1/estimate/", tenants_api.EstimateView.as_view(), name="api-estimate"),
    path("api/v1/", include(router.urls)),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include("tenants.urls")),
    path("", include("workloads.urls")),
]
