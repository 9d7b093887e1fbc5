"""Service accounts are made through their services, by an admin of the organization."""

from datetime import date

import pytest
import time_machine
from rest_framework.test import APIClient

from tenants.models import Membership
from tenants.service_accounts import services
from tests.factories import CapacityPoolFactory, MembershipFactory, OrganizationFactory, ProgramFactory


@pytest.fixture
def org(db):
    return OrganizationFactory(name="Sakura Lab", slug="sakura", language="en")


@pytest.fixture
def admin(org):
    return MembershipFactory(organization=org, role=Membership.Role.ADMIN).user


@pytest.fixture
def make_account(org, admin):
    def make(name: str = "nightly-eval", role: str = "member", **kwargs):
        return services.create_service_account(user=admin, organization=org, name=name, role=role, **kwargs)

    return make


@pytest.fixture
def key_for(admin):
    """A new token of the account, and an API client sending it."""

    def issue(account, days: int = 30) -> APIClient:
        _token, key = services.create_token(user=admin, account=account, name="ci", expires_in_days=days, via="svc-api")
        return APIClient(HTTP_AUTHORIZATION=f"Token {key}")

    return issue


@pytest.fixture
def before_the_program():
    """'Today' is 2026-12-01, before the test program (2027-01-01 – 2027-07-01): its windows are ahead."""
    with time_machine.travel(date(2026, 12, 1), tick=False):
        yield


@pytest.fixture
def pool(db):
    return CapacityPoolFactory(program=ProgramFactory(), total_instances=127)
