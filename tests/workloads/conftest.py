import pytest
from django.utils import translation

from tenants.models import Membership
from tests.conftest import forget_producer_pool  # noqa: F401  (tests import it from here)
from tests.factories import AllocationFactory, MembershipFactory, WorkloadFactory


@pytest.fixture(autouse=True)
def english():
    """Messages are compared in English. LocaleMiddleware leaves a request's language active in the
    thread afterwards, so a Japanese page earlier must not turn a later service message Japanese."""
    with translation.override("en"):
        yield


@pytest.fixture(autouse=True)
def eager_celery(eager_celery):
    """Every test here runs tasks in-process (tests/conftest.py's eager_celery)."""
    yield


@pytest.fixture
def lead(support, org):
    """The support engineer who leads `org`: cases default to them."""
    org.lead_engineer = support
    org.save(update_fields=["lead_engineer"])
    return support


@pytest.fixture
def colleague(org):
    """A second member of `org`."""
    return MembershipFactory(organization=org, role=Membership.Role.MEMBER).user


@pytest.fixture
def allocation(org):
    return AllocationFactory(organization=org)


@pytest.fixture
def other_allocation(other_org):
    return AllocationFactory(organization=other_org)


@pytest.fixture
def workload(org, member):
    return WorkloadFactory(organization=org, created_by=member, name="sakura-70b-pretrain")


@pytest.fixture
def other_workload(other_org):
    return WorkloadFactory(organization=other_org, name="kitsune-moe")


WORKLOAD_INPUT = {
    "name": "sakura-405b",
    "phase": "pretraining",
    "status": "planned",
    "model_name": "Sakura-LM 405B",
    "architecture": "dense",
    "parameter_count": 405 * 10**9,
    "active_parameter_count": None,
    "target_tokens": 15 * 10**12,
    "framework": "megatron",
    "tensor_parallel": 8,
    "pipeline_parallel": 8,
    "data_parallel": 16,
    "expert_parallel": 1,
    "cluster_type": "hyperpod_slurm",
    "storage": "fsx_lustre_s3",
    "notes": "",
}
