import os

# pytest-django's live_server with Playwright's sync API runs inside an event loop; without this
# even creating the test database fails with SynchronousOnlyOperation.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

import pytest  # noqa: E402
from django.core.cache import cache  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import translation  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from portal.celery import app as celery_app  # noqa: E402
from tenants.catalog import load_catalog  # noqa: E402
from tenants.models import InstancePrice, InstanceType, Membership, StaffRole  # noqa: E402
from tests.environment import require_postgresql  # noqa: E402
from tests.factories import MembershipFactory, OrganizationFactory, StaffRoleFactory  # noqa: E402
from workloads.validation.services import seed_baselines  # noqa: E402


def pytest_runtest_setup(item):
    """@pytest.mark.postgresql("why"): the test skips on another engine, and fails there in CI (tests.environment)."""
    marker = item.get_closest_marker("postgresql")
    if marker is not None:
        require_postgresql(*marker.args)


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # PBKDF2's many rounds are the point in production and only slow in tests.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def default_language():
    """A test that leaves another language active (a request in Japanese) must not change what the next one reads:
    tests/tenants/test_cycle.py read Japanese messages after tests/tenants/test_members.py."""
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def empty_cache():
    """The local-memory cache lives as long as the process: no test sees what another cached."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def catalog(django_db_blocker):
    """Transactional tests (live server, real workers, concurrency) flush the tables between tests,
    the migration-seeded instance-type catalog and NCCL baselines included: this puts them back (idempotent)."""
    with django_db_blocker.unblock():
        load_catalog(instance_type_model=InstanceType, price_model=InstancePrice)
        seed_baselines()


@pytest.fixture
def org(db):
    return OrganizationFactory(name="Alpha Lab", slug="alpha")


@pytest.fixture
def other_org(db):
    return OrganizationFactory(name="Beta Lab", slug="beta")


@pytest.fixture
def member(org):
    return MembershipFactory(organization=org, role=Membership.Role.MEMBER).user


@pytest.fixture
def org_admin(org):
    return MembershipFactory(organization=org, role=Membership.Role.ADMIN).user


@pytest.fixture
def outsider(other_org):
    """A member of another organization."""
    return MembershipFactory(organization=other_org).user


@pytest.fixture
def manager(db):
    return StaffRoleFactory(role=StaffRole.Role.PROGRAM_MANAGER).user


@pytest.fixture
def support(db):
    return StaffRoleFactory(role=StaffRole.Role.SUPPORT_ENGINEER).user


def _client_for(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def member_client(client, member):
    return _client_for(client, member)


@pytest.fixture
def manager_client(manager):
    # Its own client, so a test can hold member_client and manager_client at once.
    return _client_for(Client(), manager)


@pytest.fixture
def support_client(support):
    return _client_for(Client(), support)


@pytest.fixture
def api_client():
    return APIClient()


@pytest.fixture
def member_api(api_client, member):
    api_client.force_authenticate(member)
    return api_client


@pytest.fixture
def eager_celery():
    """Tasks enqueued on commit run in-process: tests see their email in mail.outbox, no broker needed."""
    # shared_task resolves to the *current* app; a test that builds another Celery() (test_healthz) makes that
    # one current, so put the portal's back first.
    celery_app.set_current()
    before = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    celery_app.conf.task_always_eager = True
    celery_app.conf.task_eager_propagates = True
    yield
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = before
    forget_producer_pool()


def forget_producer_pool() -> None:
    """An eager delay() still builds the app's producer pool, bound to the broker configured at that
    moment; drop it so a later test that points the app at another broker (a real worker) publishes there."""
    celery_app.amqp._producer_pool = None
    celery_app._pool = None
