"""The API answers what its OpenAPI schema says (docs/api.md). schemathesis generates requests for every operation of
the schema — boundary values of every documented bound, then random valid and invalid ones — and checks each answer
against the schema: a status code the operation documents, the documented content type, a body matching the
documented schema (nullability and bounds included), and never a 5xx. In-process (WSGI) through the real middleware
and authentication, with a tenant admin's API token, and a program manager's where the tenant is refused (staff-only
endpoints, decisions) and for every read; over a small program built from the factories, with another
organization's rows beside it. A new endpoint is covered by being in the schema. Deterministic (derandomized), with
a bounded number of examples per operation: the whole run takes about two minutes of one core."""

from __future__ import annotations

import logging
import sys
from datetime import timedelta
from decimal import Decimal

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import got_request_exception, request_finished, request_started
from django.db import close_old_connections
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tenants.models import Membership, StaffRole
from tenants.tokens import services as tokens
from tenants.tokens.models import ApiToken
from tests.factories import (
    ActiveAllocationFactory,
    BudgetFactory,
    CapacityRequestFactory,
    ClusterFactory,
    ClusterNodeFactory,
    DeliverableFactory,
    HealthEventFactory,
    JobFactory,
    MembershipFactory,
    MilestoneFactory,
    NcclValidationFactory,
    OrganizationFactory,
    ReportFactory,
    StaffRoleFactory,
    WorkloadFactory,
)
from workloads.review.services import add_action_item, save_review_meeting, week_of
from workloads.support.services import add_comment, open_case
from workloads.usage.models import UsageDay
from workloads.usage.rates import add_rate

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# Random cases per operation, valid and invalid, after the coverage phase's boundary cases (valid ones: each bound
# reached, each optional field left out); measured at about two minutes of one core for the whole schema.
EXAMPLES = 15
CONFIG = SchemathesisConfig.from_dict(
    {
        "generation": {"max-examples": EXAMPLES, "deterministic": True, "no-shrink": True, "database": "none"},
        "suppress-health-check": ["all"],  # a loaded machine is slow, not wrong
        "phases": {"coverage": {"generation": {"mode": "positive"}}},
    }
)
schema = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True), config=CONFIG)


class App(WSGIHandler):
    """The portal's WSGI application inside the test's transaction: Django closes the database connection after
    every request (close_old_connections), which would end that transaction; Django's test client skips it too. An
    exception a view raises is kept, so a 500 shows its traceback."""

    def __init__(self) -> None:
        super().__init__()
        self.errors: list[BaseException] = []

    def __call__(self, environ, start_response):
        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)
        got_request_exception.connect(self.keep, weak=False)
        try:
            response = super().__call__(environ, start_response)
            response.close()  # sends request_finished while the handler is off
            return response
        finally:
            got_request_exception.disconnect(self.keep)
            request_started.connect(close_old_connections)
            request_finished.connect(close_old_connections)

    def keep(self, sender, request=None, **kwargs) -> None:
        self.errors.append(sys.exc_info()[1])


@pytest.fixture
def callers(catalog, db) -> dict[str, str]:
    """API keys of a tenant admin and of a program manager, over an organization with a row of everything the API
    serves, and another organization's rows, which the tenant must not reach."""
    tenant = MembershipFactory(organization=OrganizationFactory(slug="sakura"), role=Membership.Role.ADMIN).user
    manager = StaffRoleFactory(role=StaffRole.Role.PROGRAM_MANAGER).user
    org = tenant.memberships.get().organization
    for organization in (org, OrganizationFactory(slug="other")):
        allocation = ActiveAllocationFactory(organization=organization)
        cluster = ClusterFactory(organization=organization, allocation=allocation)
        workload = WorkloadFactory(organization=organization, allocation=allocation)
        ClusterNodeFactory(cluster=cluster)
        JobFactory(cluster=cluster)
        HealthEventFactory(cluster=cluster)
        NcclValidationFactory(cluster=cluster)
        CapacityRequestFactory(organization=organization, pool=allocation.pool, created_by=tenant)
        case = open_case(
            user=manager,
            organization=organization,
            title="NCCL timeout",
            description="all_reduce hangs after 20 minutes.",
            category="networking",
            workload=workload,
            cluster=cluster,
        )
        add_comment(user=manager, case=case, body="Looking at the EFA counters.", internal=True)
        # Outcomes: a milestone, a deliverable, a budget and a report of each organization.
        program = allocation.pool.program
        MilestoneFactory(organization=organization)
        DeliverableFactory(organization=organization)
        BudgetFactory(program=program, organization=organization)
        ReportFactory(program=program, organization=organization)
        UsageDay.objects.create(
            organization=organization,
            pool=allocation.pool,
            day=timezone.localdate() - timedelta(days=1),
            allocated_microseconds=8 * 24 * 3600 * 10**6,
            running_microseconds=4 * 24 * 3600 * 10**6,
            computed_at=timezone.now(),
        )
    meeting, _created = save_review_meeting(user=manager, week_start=week_of(timezone.localdate()), minutes="W")
    add_action_item(user=manager, meeting=meeting, text="Check the NCCL case", organization=org)
    BudgetFactory(program=allocation.pool.program, organization=None)  # the program's own: staff only
    add_rate(
        user=manager,
        instance_type=allocation.pool.instance_type,
        region=allocation.pool.region,
        kind="reserved",
        usd_per_hour=Decimal("40.00"),
        effective_from=allocation.starts_on,
    )
    return {
        name: tokens.create_token(user=user, name="conformance", expires_in_days=30, via="api")[1]
        for name, user in (("tenant", tenant), ("manager", manager))
    }


@pytest.fixture
def quiet_request_log():
    """Each refused request is a WARNING of django.request: thousands of them here, none news."""
    logger = logging.getLogger("django.request")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


@schema.parametrize()
@pytest.mark.django_db
def test_every_answer_is_one_the_schema_documents(case, callers, quiet_request_log):
    app = App()
    for who in ("tenant", "manager"):
        headers = {"Authorization": f"Token {callers[who]}"}
        response = case.call(app=app, headers=headers)
        assert not app.errors, app.errors[0]  # a 5xx's cause, with its traceback
        # DELETE /auth/tokens/{id}/ may have revoked the caller's own token, which the next case needs.
        ApiToken.objects.filter(name="conformance").update(revoked_at=None, revoked_by=None)
        case.validate_response(response, checks=CHECKS, headers=headers)
        # The manager reads too (staff see other fields: internal notes, every organization), and writes where the
        # tenant is refused (the weekly review, decisions on capacity, the rate card).
        if case.method.upper() != "GET" and response.status_code != 403:
            break
