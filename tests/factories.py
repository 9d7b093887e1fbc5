"""One factory per model; SubFactory chains build whatever a test needs."""

from datetime import date, timedelta

import factory
from django.contrib.auth import get_user_model
from django.utils import timezone

from tenants.members.models import Invitation
from tenants.models import (
    Allocation,
    CapacityPool,
    CapacityRequest,
    InstanceType,
    Membership,
    Organization,
    Program,
    Region,
    StaffRole,
)
from tenants.service_accounts.models import ServiceAccount
from tenants.tokens.models import ApiToken
from tenants.tokens.services import create_token
from workloads.models import (
    Budget,
    Cluster,
    ClusterInstanceGroup,
    ClusterNode,
    Deliverable,
    HealthEvent,
    Job,
    Milestone,
    NcclValidation,
    OrgCloudSettings,
    Report,
    ReporterToken,
    ReportRecipient,
    SupportCase,
    Workload,
)

PASSWORD = "correct horse battery staple"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ["username"]
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class ProgramFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Program
        django_get_or_create = ["slug"]

    name = "Test program"
    slug = "test-program"
    starts_on = date(2027, 1, 1)
    ends_on = date(2027, 7, 1)


def instance_type(api_name: str = "p5.48xlarge") -> InstanceType:
    """The catalog is seeded by a migration, so tests use the real entries."""
    return InstanceType.objects.get(api_name=api_name)


class CapacityPoolFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CapacityPool
        django_get_or_create = ["program", "instance_type", "region", "capacity_reservation_id"]

    program = factory.SubFactory(ProgramFactory)
    instance_type = factory.LazyFunction(instance_type)
    region = Region.US_EAST_1
    capacity_reservation_id = ""
    total_instances = 127
    spare_instances = 0
    starts_on = factory.SelfAttribute("program.starts_on")
    ends_on = factory.SelfAttribute("program.ends_on")


class OrganizationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Organization

    name = factory.Sequence(lambda n: f"Organization {n}")
    slug = factory.Sequence(lambda n: f"org-{n}")
    aws_account_id = factory.Sequence(lambda n: f"{200000000000 + n:012d}")
    role_arn = factory.LazyAttribute(lambda o: f"arn:aws:iam::{o.aws_account_id}:role/PortalAccess")
    external_id = factory.LazyAttribute(lambda o: f"ext-{o.slug}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    organization = factory.SubFactory(OrganizationFactory)
    role = Membership.Role.MEMBER


class StaffRoleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = StaffRole

    user = factory.SubFactory(UserFactory)
    role = StaffRole.Role.PROGRAM_MANAGER


# Tenant-owned models and how to build one for a given organization. tests/test_tenant_gate.py uses
# it to put another org's object behind every route; a new tenant model needs an entry here.
TENANT_FACTORIES: dict = {}


class CapacityRequestFactory(factory.django.DjangoModelFactory):
    """A submitted request for one P5 in us-east-1 over the pool's first month."""

    class Meta:
        model = CapacityRequest

    organization = factory.SubFactory(OrganizationFactory)
    pool = factory.SubFactory(CapacityPoolFactory)
    instance_count = 8
    starts_on = factory.SelfAttribute("pool.starts_on")
    ends_on = factory.LazyAttribute(lambda r: r.pool.starts_on + timedelta(days=30))
    justification = "Pre-training a 7B model."
    status = CapacityRequest.Status.SUBMITTED
    created_by = factory.SubFactory(UserFactory)


class AllocationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Allocation

    organization = factory.SubFactory(OrganizationFactory)
    pool = factory.SubFactory(CapacityPoolFactory)
    instance_count = 8
    starts_on = factory.SelfAttribute("pool.starts_on")
    ends_on = factory.LazyAttribute(lambda a: a.pool.starts_on + timedelta(days=30))
    status = Allocation.Status.SCHEDULED


TENANT_FACTORIES[CapacityRequest] = CapacityRequestFactory
TENANT_FACTORIES[Membership] = MembershipFactory
TENANT_FACTORIES[Allocation] = AllocationFactory


# --- Workloads and support cases -------------------------------------------------------


class WorkloadFactory(factory.django.DjangoModelFactory):
    """A dense 8B pre-training run on PyTorch FSDP; history rows come only from workloads.records.services."""

    class Meta:
        model = Workload

    organization = factory.SubFactory(OrganizationFactory)
    name = factory.Sequence(lambda n: f"workload-{n}")
    phase = Workload.Phase.PRETRAINING
    model_name = "Test-LM 8B"
    architecture = Workload.Architecture.DENSE
    parameter_count = 8 * 10**9
    target_tokens = 2 * 10**12
    framework = Workload.Framework.PYTORCH_FSDP
    tensor_parallel = 1
    pipeline_parallel = 1
    data_parallel = 64
    cluster_type = Workload.ClusterType.HYPERPOD_SLURM
    storage = Workload.Storage.FSX_LUSTRE_S3
    created_by = factory.SubFactory(UserFactory)


class SupportCaseFactory(factory.django.DjangoModelFactory):
    """A case row without history; tests of the history open cases through workloads.support.services."""

    class Meta:
        model = SupportCase

    organization = factory.SubFactory(OrganizationFactory)
    title = factory.Sequence(lambda n: f"NCCL timeout on job {n}")
    description = "all_reduce hangs after 20 minutes on 16 nodes."
    category = SupportCase.Category.NETWORKING
    severity = SupportCase.Severity.S2
    opened_by = factory.SubFactory(UserFactory)


TENANT_FACTORIES[Workload] = WorkloadFactory
TENANT_FACTORIES[SupportCase] = SupportCaseFactory


# --- Clusters --------------------------------------------------------------------------


class ActiveAllocationFactory(AllocationFactory):
    """An allocation active today (program time), which is what a cluster is made from."""

    status = Allocation.Status.ACTIVE
    starts_on = factory.LazyFunction(lambda: timezone.localdate() - timedelta(days=7))
    ends_on = factory.LazyFunction(lambda: timezone.localdate() + timedelta(days=60))


class OrgCloudSettingsFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = OrgCloudSettings
        django_get_or_create = ["organization"]

    organization = factory.SubFactory(OrganizationFactory)
    lifecycle_s3_uri = factory.LazyAttribute(lambda s: f"s3://sagemaker-{s.organization.slug}-lifecycle/hyperpod/")
    execution_role_arn = factory.LazyAttribute(
        lambda s: f"arn:aws:iam::{s.organization.aws_account_id}:role/HyperPodExecution"
    )
    subnet_ids = factory.LazyFunction(lambda: ["subnet-0abc1234"])
    security_group_ids = factory.LazyFunction(lambda: ["sg-0abc1234"])


class ClusterFactory(factory.django.DjangoModelFactory):
    """A cluster row in service with two P5 workers (no cloud call: tests of provisioning use the services)."""

    class Meta:
        model = Cluster
        skip_postgeneration_save = True

    organization = factory.SubFactory(OrganizationFactory)
    allocation = factory.SubFactory(ActiveAllocationFactory, organization=factory.SelfAttribute("..organization"))
    name = factory.Sequence(lambda n: f"cluster-{n}")
    kind = Cluster.Kind.HYPERPOD_SLURM
    region = factory.SelfAttribute("allocation.pool.region")
    status = Cluster.Status.IN_SERVICE
    cloud_name = factory.Sequence(lambda n: f"fmp-test-{n}")
    lifecycle_s3_uri = "s3://sagemaker-test-lifecycle/hyperpod/"
    execution_role_arn = "arn:aws:iam::111122223333:role/HyperPodExecution"
    subnet_ids = factory.LazyFunction(lambda: ["subnet-0abc1234"])

    @factory.post_generation
    def workers(obj, create, extracted, **kwargs):
        if create:
            ClusterInstanceGroup.objects.create(
                organization=obj.organization,
                cluster=obj,
                name="workers-p5-48xlarge",
                instance_type=obj.allocation.pool.instance_type.api_name,
                instance_count=2 if extracted is None else extracted,
            )


TENANT_FACTORIES[Cluster] = ClusterFactory


# --- What clusters report: jobs, GPU health, nccl-tests runs, reporter tokens ---------------------------


class ClusterNodeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ClusterNode

    cluster = factory.SubFactory(ClusterFactory)
    organization = factory.SelfAttribute("cluster.organization")
    instance_id = factory.Sequence(lambda n: f"i-{n:017x}")
    hostname = factory.Sequence(lambda n: f"ip-10-1-{n // 250}-{n % 250 + 1}")
    group_name = "workers-p5-48xlarge"
    instance_type = "p5.48xlarge"
    status = "Running"
    first_seen_at = factory.LazyFunction(timezone.now)
    last_seen_at = factory.LazyFunction(timezone.now)


class JobFactory(factory.django.DjangoModelFactory):
    """A finished two-hour job on 8 GPUs of one node."""

    class Meta:
        model = Job

    cluster = factory.SubFactory(ClusterFactory)
    organization = factory.SelfAttribute("cluster.organization")
    job_id = factory.Sequence(lambda n: str(1000 + n))
    name = "pretrain-8b"
    user = "alice"
    account = "lab"
    partition = "p5"
    state = "COMPLETED"
    started_at = factory.LazyFunction(lambda: timezone.now() - timedelta(hours=3))
    ended_at = factory.LazyFunction(lambda: timezone.now() - timedelta(hours=1))
    submitted_at = factory.SelfAttribute("started_at")
    elapsed_seconds = 7200
    node_count = 1
    node_list = "ip-10-1-0-1"
    accelerators = 8
    accelerator_kind = "gpu"
    first_reported_at = factory.LazyFunction(timezone.now)
    last_reported_at = factory.LazyFunction(timezone.now)


class HealthEventFactory(factory.django.DjangoModelFactory):
    """An open Xid 79 on GPU 3."""

    class Meta:
        model = HealthEvent

    cluster = factory.SubFactory(ClusterFactory)
    organization = factory.SelfAttribute("cluster.organization")
    instance_id = factory.Sequence(lambda n: f"i-{n:017x}")
    gpu = 3
    kind = HealthEvent.Kind.GPU_XID
    code = 79
    severity = HealthEvent.Severity.CRITICAL
    action = "replace node"
    source = HealthEvent.Source.PUSH
    message = "Xid 79 on GPU 3: GPU has fallen off the bus"
    observed_at = factory.LazyFunction(timezone.now)


class NcclValidationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = NcclValidation

    cluster = factory.SubFactory(ClusterFactory)
    organization = factory.SelfAttribute("cluster.organization")
    instance_type = "p5.48xlarge"
    nodes = 2
    rows = factory.LazyFunction(lambda: [[2**30, 437.0, 441.0], [16 * 2**30, 487.1, 487.3]])
    peak_busbw_gbps = 487.26
    peak_size_bytes = 16 * 2**30
    baseline_busbw_gbps = 487.0
    baseline_nodes = 2
    fraction = 1.0
    verdict = NcclValidation.Verdict.PASSED
    log_digest = factory.Sequence(lambda n: f"{n:064x}")


class ReporterTokenFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ReporterToken

    cluster = factory.SubFactory(ClusterFactory)
    organization = factory.SelfAttribute("cluster.organization")
    name = "head node"
    prefix = factory.Sequence(lambda n: f"fmc_{n:08d}")
    digest = factory.Sequence(lambda n: f"{n:064x}")
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=365))


TENANT_FACTORIES[ClusterNode] = ClusterNodeFactory
TENANT_FACTORIES[Job] = JobFactory
TENANT_FACTORIES[HealthEvent] = HealthEventFactory
TENANT_FACTORIES[NcclValidation] = NcclValidationFactory
# A reporter token of a cluster of the organization (the factory alone gives the cluster an organization of its own).
TENANT_FACTORIES[ReporterToken] = lambda organization: ReporterTokenFactory(
    cluster=ClusterFactory(organization=organization)
)


# --- Organization members: invitations ---------------------------------------------------------------------------


class InvitationFactory(factory.django.DjangoModelFactory):
    """A pending invitation (its key unknown: tests that open the link invite through tenants.members.services)."""

    class Meta:
        model = Invitation

    organization = factory.SubFactory(OrganizationFactory)
    email = factory.Sequence(lambda n: f"invitee{n}@example.org")
    role = Membership.Role.MEMBER
    prefix = factory.Sequence(lambda n: f"inv_{n:08d}")
    digest = factory.Sequence(lambda n: f"{n:064x}")
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=7))


TENANT_FACTORIES[Invitation] = InvitationFactory


# --- Service accounts ----------------------------------------------------------------------------------------------


class ServiceAccountFactory(factory.django.DjangoModelFactory):
    """An enabled service account with its user (no usable password) and its membership (`role=`, default member);
    tests of the rules create them through tenants.service_accounts.services."""

    class Meta:
        model = ServiceAccount
        skip_postgeneration_save = True

    organization = factory.SubFactory(OrganizationFactory)
    name = factory.Sequence(lambda n: f"robot-{n}")
    user = factory.LazyAttribute(
        lambda a: get_user_model().objects.create_user(username=f"svc-{a.organization.slug}-{a.name}")
    )

    @factory.post_generation
    def role(obj, create, extracted, **kwargs):
        if create:
            Membership.objects.create(user=obj.user, organization=obj.organization, role=extracted or "member")


def service_account_token(organization, **kwargs) -> ApiToken:
    """A token of a new service account of the organization (a person's own tokens are no organization's)."""
    account = ServiceAccountFactory(organization=organization, **kwargs)
    return create_token(user=account.user, name="script", expires_in_days=30, via=ApiToken.Via.SERVICE_ACCOUNT_API)[0]


TENANT_FACTORIES[ServiceAccount] = ServiceAccountFactory
TENANT_FACTORIES[ApiToken] = service_account_token


# --- Outcomes ------------------------------------------------------------------------------


class MilestoneFactory(factory.django.DjangoModelFactory):
    """A milestone the organization reports and program staff confirm (no workload: not measured)."""

    class Meta:
        model = Milestone

    organization = factory.SubFactory(OrganizationFactory)
    title = factory.Sequence(lambda n: f"Milestone {n}")
    due_on = date(2027, 2, 28)


class DeliverableFactory(factory.django.DjangoModelFactory):
    """A paper with an arXiv id."""

    class Meta:
        model = Deliverable

    organization = factory.SubFactory(OrganizationFactory)
    kind = Deliverable.Kind.PAPER
    title = factory.Sequence(lambda n: f"Technical report {n}")
    released_on = date(2027, 1, 15)
    arxiv_id = "2407.03963"


class BudgetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Budget

    program = factory.SubFactory(ProgramFactory)
    organization = factory.SubFactory(OrganizationFactory)
    amount = 1_000_000_000
    currency = Budget.Currency.JPY
    alert_percents = [80, 100]


class ReportFactory(factory.django.DjangoModelFactory):
    """An organization's monthly report (its files' bytes stand in: the tests of reports make real ones)."""

    class Meta:
        model = Report

    program = factory.SubFactory(ProgramFactory)
    organization = factory.SubFactory(OrganizationFactory)
    kind = Report.Kind.MONTHLY
    first_day = date(2027, 1, 1)
    last_day = date(2027, 1, 31)
    language = "en"
    generated_at = factory.LazyFunction(timezone.now)
    xlsx = b"PK"
    pdf = b"%PDF-1.7"


class ReportRecipientFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ReportRecipient

    program = factory.SubFactory(ProgramFactory)
    organization = factory.SubFactory(OrganizationFactory)
    email = factory.Sequence(lambda n: f"recipient{n}@example.jp")


TENANT_FACTORIES[Milestone] = MilestoneFactory
TENANT_FACTORIES[Report] = ReportFactory
TENANT_FACTORIES[ReportRecipient] = ReportRecipientFactory
TENANT_FACTORIES[Deliverable] = DeliverableFactory
TENANT_FACTORIES[Budget] = BudgetFactory
