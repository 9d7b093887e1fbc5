"""The token endpoints: a script trades username and password for a new token; a user lists and revokes theirs."""

from django.conf import settings
from django.contrib.auth import authenticate
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, mixins, status, viewsets
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.schema import errors
from tenants.logins.forms import password_login_off_message
from tenants.logins.lockout import client_address, is_locked_out, lockout_message, seconds_until_unlocked
from tenants.tokens import services
from tenants.tokens.models import ApiToken
from tenants.tokens.serializers import ApiTokenSerializer, IssuedTokenSerializer, NewTokenSerializer
from tenants.twofactor.services import requires_second_factor


class LockedOut(exceptions.Throttled):
    """429 with Retry-After, the message saying how long already (DRF's own would add a second sentence)."""

    def __init__(self, *, wait: int, detail: str):
        super().__init__(detail=detail)
        self.wait = wait


class ObtainTokenView(APIView):
    """POST username and password: a new named token. Each call creates one; keep it rather than asking again."""

    authentication_classes = []  # the credentials are in the body
    permission_classes = [AllowAny]
    serializer_class = NewTokenSerializer

    @extend_schema(
        operation_id="auth_token_create",
        tags=["auth"],
        auth=[],
        request=NewTokenSerializer,
        responses={
            201: IssuedTokenSerializer,
            400: OpenApiResponse(
                description="A missing field, or wrong username or password; with local passwords switched off "
                "(LOCAL_PASSWORD_LOGIN=False), any account but a break-glass one. People who sign in with their "
                "institution create tokens on /account/tokens/."
            ),
            403: OpenApiResponse(
                description="The account signs in with a second factor (two-factor authentication): a password "
                "alone gets no token. Create one on the API tokens page after logging in."
            ),
            429: OpenApiResponse(  # its body, Error, and Retry-After header come from portal.schema
                description="Too many failed logins for this account or from this address (10 within 15 minutes "
                "of each other): every login, with the right password too, is refused until Retry-After seconds.",
            ),
        },
        description=(
            "Trade a username and password for a new API token, sent as `Authorization: Token <key>`. The key is "
            "in the answer once and is stored only hashed: keep it. It expires after `expires_in_days` (default "
            "90, at most 365); list and revoke tokens at `/account/tokens/` or `/api/v1/auth/tokens/`."
        ),
    )
    def post(self, request):
        serializer = NewTokenSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        user = authenticate(request=request, username=data["username"], password=data["password"])
        if user is None:
            if is_locked_out(request):
                seconds = seconds_until_unlocked(request, data["username"])
                raise LockedOut(wait=seconds, detail=lockout_message(seconds))
            if not settings.LOCAL_PASSWORD_LOGIN:
                raise exceptions.ValidationError({"non_field_errors": [password_login_off_message()]})
            raise exceptions.ValidationError({"non_field_errors": [_("Unable to log in with provided credentials.")]})
        if requires_second_factor(user):
            raise exceptions.PermissionDenied(
                _(
                    "This account signs in with a second factor: a password alone gets no token. Log in to the "
                    "portal and create one on the API tokens page (/account/tokens/)."
                )
            )
        token, key = services.create_token(
            user=user,
            name=data.get("name", ""),
            expires_in_days=data["expires_in_days"],
            via=ApiToken.Via.API,
            address=client_address(request),
        )
        token.token = key
        return Response(IssuedTokenSerializer(token).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["auth"])
class ApiTokenViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet
):
    """Your own API tokens (never their keys). DELETE revokes one: it stops working at once and stays listed."""

    serializer_class = ApiTokenSerializer
    filter_backends = []

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular reading the model, no user
            return ApiToken.objects.none()
        return ApiToken.objects.for_user(self.request.user)

    @extend_schema(responses={204: None})
    @errors({400: None})  # revoking twice keeps the first record: never refused
    def destroy(self, request, *args, **kwargs):
        services.revoke_token(token=self.get_object(), by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
