"""API of an organization's service accounts and their tokens, under /api/v1/organizations/{slug}/service-accounts/.
Everyone in the org reads them (never a key); its admins (and program staff) create, change, disable and enable
them and make and revoke their tokens (tenants.service_accounts.services)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.generics import get_object_or_404
from rest_framework.response import Response

from portal.schema import errors
from tenants.logins.lockout import client_address
from tenants.members.api import ORG_SLUG, OrganizationChildViewSet
from tenants.service_accounts import services
from tenants.service_accounts.models import ServiceAccount
from tenants.service_accounts.serializers import (
    IssuedServiceAccountTokenSerializer,
    NewServiceAccountSerializer,
    NewServiceAccountTokenSerializer,
    ServiceAccountChangeSerializer,
    ServiceAccountSerializer,
    ServiceAccountTokenSerializer,
)
from tenants.tokens.models import ApiToken

SERVICE_ACCOUNT_ID = OpenApiParameter(
    "service_account_id", int, OpenApiParameter.PATH, description="Id of the organization's service account."
)
MANAGERS_ONLY = "Admins of the organization and program staff only."


@extend_schema_view(
    list=extend_schema(
        parameters=[ORG_SLUG],
        description="The organization's service accounts, disabled ones included, sorted by name.",
    ),
    retrieve=extend_schema(parameters=[ORG_SLUG]),
    create=extend_schema(
        parameters=[ORG_SLUG],
        request=NewServiceAccountSerializer,
        responses={201: ServiceAccountSerializer},
        description="Create a service account with the role member or viewer (never admin). "
        + MANAGERS_ONLY
        + " It has no token yet: create one under tokens/.",
    ),
    partial_update=extend_schema(
        parameters=[ORG_SLUG],
        request=ServiceAccountChangeSerializer,
        description="Change the role (member or viewer) or the description. "
        + MANAGERS_ONLY
        + " A new role holds from the account's next request.",
    ),
)
class ServiceAccountViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, OrganizationChildViewSet
):
    model = ServiceAccount  # tests/test_tenant_gate.py: the id names a service account
    serializer_class = ServiceAccountSerializer
    http_method_names = ["get", "post", "patch", "head", "options"]
    filter_backends = []

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema generator: no organization in the URL
            return ServiceAccount.objects.none()
        return ServiceAccount.objects.for_org(self.org_access().organization).with_details().order_by("name")

    def create(self, request, *args, **kwargs):
        organization = self.org_access().organization
        services.managing_access(request.user, organization)  # 403 before the body is read
        serializer = NewServiceAccountSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        account = services.create_service_account(
            user=request.user, organization=organization, **serializer.validated_data
        )
        return Response(ServiceAccountSerializer(account).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        account = self.get_object()  # another org's: 404
        services.managing_access(request.user, self.org_access().organization)
        change = ServiceAccountChangeSerializer(data=request.data)
        change.is_valid(raise_exception=True)
        account = services.change_service_account(user=request.user, account=account, **change.validated_data)
        return Response(ServiceAccountSerializer(account).data)

    @extend_schema(
        parameters=[ORG_SLUG],
        request=None,
        responses={200: ServiceAccountSerializer},
        description="Disable the account: every token of it is revoked at once (its next request is a 401) and it "
        "authenticates no more. Nothing is deleted; disabling twice changes nothing. " + MANAGERS_ONLY,
    )
    @errors({400: None})
    @action(detail=True, methods=["post"])
    def disable(self, request, *args, **kwargs):
        account = self.get_object()
        services.managing_access(request.user, self.org_access().organization)
        account = services.disable_service_account(user=request.user, account=account)
        return Response(ServiceAccountSerializer(account).data)

    @extend_schema(
        parameters=[ORG_SLUG],
        request=None,
        responses={200: ServiceAccountSerializer},
        description="Enable a disabled account again. Its revoked tokens stay revoked: create a new one. "
        + MANAGERS_ONLY,
    )
    @errors({400: None})
    @action(detail=True, methods=["post"])
    def enable(self, request, *args, **kwargs):
        account = self.get_object()
        services.managing_access(request.user, self.org_access().organization)
        account = services.enable_service_account(user=request.user, account=account)
        return Response(ServiceAccountSerializer(account).data)


@extend_schema_view(
    list=extend_schema(
        parameters=[ORG_SLUG, SERVICE_ACCOUNT_ID],
        description="The service account's tokens (never their keys), revoked and expired ones included, newest "
        "first, with when each was last used.",
    ),
    retrieve=extend_schema(parameters=[ORG_SLUG, SERVICE_ACCOUNT_ID]),
    create=extend_schema(
        parameters=[ORG_SLUG, SERVICE_ACCOUNT_ID],
        request=NewServiceAccountTokenSerializer,
        responses={
            201: IssuedServiceAccountTokenSerializer,
            400: OpenApiResponse(
                description="A field's value, a disabled account, or the most active tokens an account may have."
            ),
        },
        description="Create a token for the service account, sent as `Authorization: Token <key>`. The key is in "
        "the answer once and is stored only hashed: keep it. " + MANAGERS_ONLY,
    ),
    destroy=extend_schema(
        parameters=[ORG_SLUG, SERVICE_ACCOUNT_ID],
        responses={204: None},
        description="Revoke the token: it stops working at once and stays listed. " + MANAGERS_ONLY,
    ),
)
class ServiceAccountTokenViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    OrganizationChildViewSet,
):
    # A token of one of the organization's service accounts (tests.factories.TENANT_FACTORIES makes one); the
    # account's id in the URL is read from it (tests/test_tenant_gate.py, PARENT_KWARGS).
    model = ApiToken
    serializer_class = ServiceAccountTokenSerializer
    http_method_names = ["get", "post", "delete", "head", "options"]
    filter_backends = []

    def service_account(self) -> ServiceAccount:
        """The URL's account, of the URL's organization (another's, or no number: 404)."""
        if not hasattr(self, "_service_account"):
            accounts = ServiceAccount.objects.for_org(self.org_access().organization).select_related("user")
            self._service_account = get_object_or_404(accounts, pk=self.kwargs["service_account_id"])
        return self._service_account

    def check_permissions(self, request):
        super().check_permissions(request)
        self.service_account()  # 404 for another org's account, before anything else

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema generator: no organization in the URL
            return ApiToken.objects.none()
        return services.tokens_of(self.service_account())

    def create(self, request, *args, **kwargs):
        account = self.service_account()
        services.managing_access(request.user, account.organization)  # 403 before the body is read
        serializer = NewServiceAccountTokenSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        token, key = services.create_token(
            user=request.user,
            account=account,
            name=serializer.validated_data["name"],
            expires_in_days=serializer.validated_data["expires_in_days"],
            via=ApiToken.Via.SERVICE_ACCOUNT_API,
            address=client_address(request),
        )
        token.token = key
        return Response(IssuedServiceAccountTokenSerializer(token).data, status=status.HTTP_201_CREATED)

    @errors({400: None})  # revoking twice keeps the first record: never refused
    def destroy(self, request, *args, **kwargs):
        token = self.get_object()
        account = self.service_account()
        services.managing_access(request.user, account.organization)
        services.revoke_token(user=request.user, account=account, token=token)
        return Response(status=status.HTTP_204_NO_CONTENT)
