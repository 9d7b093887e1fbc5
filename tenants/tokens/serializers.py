from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from portal import serializers as api
from tenants.tokens import services
from tenants.tokens.models import ApiToken


class NewTokenSerializer(api.Serializer):
    # As long as a username can be (150): a longer one would not fit the failed-login record either.
    username = serializers.CharField(
        trim_whitespace=False, max_length=150, help_text="Username of the account the token is for."
    )
    password = serializers.CharField(
        max_length=1024,
        trim_whitespace=False,
        style={"input_type": "password"},
        write_only=True,
        help_text="That account's password.",
    )
    name = serializers.CharField(
        max_length=100,
        required=False,
        allow_blank=True,
        help_text=_('What the token is for; default "script <date and time>".'),
    )
    expires_in_days = serializers.IntegerField(
        min_value=1,
        max_value=services.MAX_DAYS,
        default=services.DEFAULT_DAYS,
        help_text=_("Days until the token stops working (1 to 365; default 90)."),
    )


class ApiTokenSerializer(api.ModelSerializer):
    state = serializers.CharField(read_only=True, help_text=_("active, expired or revoked"))

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "prefix",
            "state",
            "created_at",
            "created_via",
            "expires_at",
            "last_used_at",
            "revoked_at",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "name": {"help_text": "What the token is for, as named when it was created."},
            "prefix": {
                "help_text": "The key's first characters (fmp_ and 8 more), to tell tokens apart; the key itself is "
                "never shown again."
            },
            "created_via": {
                "help_text": "page: made on the API tokens page; api: traded for username and password; svc-page, "
                "svc-api: a service account's, made by an admin of its organization on its page or through the API."
            },
            "expires_at": {"help_text": "When the token stops working."},
            "last_used_at": {
                "help_text": "When the token last authenticated a request (to within a minute); null if never used."
            },
            "revoked_at": {"help_text": "When the token was revoked; null unless revoked."},
        }


class IssuedTokenSerializer(ApiTokenSerializer):
    token = serializers.CharField(read_only=True, help_text=_("The key: shown this once, never again."))

    class Meta(ApiTokenSerializer.Meta):
        fields = ["token", *ApiTokenSerializer.Meta.fields]
        read_only_fields = fields
