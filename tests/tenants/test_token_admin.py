"""Django admin shows hashed keys read-only and lets staff revoke them (tenants.tokens.admin.KeyAdmin)."""

import pytest
from django.urls import reverse

from tenants.tokens.models import ApiToken
from tenants.tokens.services import create_token
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_staff_see_keys_read_only_and_revoke_them(admin_client):
    user = UserFactory()
    token, _ = create_token(user=user, name="x", expires_in_days=30, via="page")
    assert token is not None
    url = reverse("admin:tenants_apitoken_changelist")
    assert admin_client.get(url).status_code == 200
    assert admin_client.get(reverse("admin:tenants_apitoken_change", args=[token.pk])).status_code == 200
    admin_client.post(url, {"action": "revoke", "_selected_action": [token.pk]})
    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None
    assert admin_client.get(reverse("admin:tenants_scimtoken_changelist")).status_code == 200
