"""The HyperPod provider against moto's SageMaker (real boto3 code path, in process)."""

import json
from datetime import UTC, datetime

import pytest
from botocore.awsrequest import AWSResponse
from botocore.stub import Stubber
from moto.core.botocore_stubber import MockRawResponse

from portal.cloud import (
    AccountAccess,
    CloudStatus,
    ClusterSpec,
    GroupRole,
    GroupSpec,
    PermanentCloudError,
    TransientCloudError,
    hyperpod,
    session_for,
)
from portal.cloud.hyperpod import HyperPodProvider
from portal.cloud.lifecycle import SAMPLE_ON_CREATE, seed_lifecycle_scripts
from tests.cloud.conftest import ROLE_ARN

LIFECYCLE = "s3://sagemaker-alpha-lifecycle/hyperpod/"


@pytest.fixture(autouse=True)
def scripts(request):
    """The org's lifecycle scripts, where HyperPod (Slurm) clusters copy them from."""
    if "session" in request.fixturenames:
        seed_lifecycle_scripts(request.getfixturevalue("session"), LIFECYCLE, {"on_create.sh": SAMPLE_ON_CREATE})


def spec(name="fmp-1-llm", workers=2, worker_type="p5.48xlarge", **overrides):
    values = dict(
        name=name,
        region="us-east-1",
        groups=(
            GroupSpec("controller-machine", "m5.12xlarge", 1, GroupRole.CONTROLLER),
            GroupSpec("workers-p5", worker_type, workers, GroupRole.WORKER),
        ),
        subnet_ids=("subnet-0abc1234",),
        security_group_ids=("sg-0abc1234",),
        lifecycle_s3_uri=LIFECYCLE,
        execution_role_arn="arn:aws:iam::111122223333:role/HyperPodExecution",
    )
    values.update(overrides)
    return ClusterSpec(**values)


def throttle(client, operation: str, times: int) -> list[int]:
    """Answer the next `times` calls of `operation` with ThrottlingException before moto sees them."""
    calls = []

    def handler(request, **kwargs):
        calls.append(1)
        if len(calls) > times:
            return None
        body = json.dumps({"__type": "ThrottlingException", "message": "Rate exceeded"})
        return AWSResponse(request.url, 400, {"x-amzn-ErrorType": "ThrottlingException"}, MockRawResponse(body))

    client.meta.events.register_first(f"before-send.sagemaker.{operation}", handler)
    return calls


def test_session_assumes_the_orgs_role_with_its_external_id(session):
    identity = session.client("sts").get_caller_identity()
    assert identity["Account"] == "111122223333"
    assert ":assumed-role/PortalAccess/" in identity["Arn"]
    assert session.account_id == "111122223333"


def test_assumed_session_is_reused_until_near_expiry(aws):
    access = AccountAccess(role_arn=ROLE_ARN, external_id="ext-x", region="us-east-1")
    assert session_for(access) is session_for(access)
    other_region = AccountAccess(role_arn=ROLE_ARN, external_id="ext-x", region="ap-northeast-1")
    assert session_for(other_region) is not session_for(access)


def test_org_without_a_role_gets_a_clear_permanent_error(aws):
    with pytest.raises(PermanentCloudError, match="no cross-account role"):
        session_for(AccountAccess(role_arn="", external_id="", region="us-east-1"))


def test_create_describe_list_delete(session):
    provider = HyperPodProvider(session)
    created = provider.create(spec())
    assert created.status == CloudStatus.IN_SERVICE
    assert created.cloud_id.startswith("arn:aws:sagemaker:us-east-1:111122223333:cluster/")
    assert {(g.name, g.instance_type, g.target_count) for g in created.groups} == {
        ("controller-machine", "m5.12xlarge", 1),
        ("workers-p5", "p5.48xlarge", 2),
    }

    nodes = provider.list_nodes("fmp-1-llm")
    assert sorted((n.group, n.instance_type, n.status) for n in nodes) == [
        ("controller-machine", "m5.12xlarge", "Running"),
        ("workers-p5", "p5.48xlarge", "Running"),
        ("workers-p5", "p5.48xlarge", "Running"),
    ]
    assert all(n.launch_time is not None for n in nodes)
    assert {n.message for n in nodes} == {""}  # the emulator's placeholder "message" is no word from AWS

    provider.delete("fmp-1-llm")
    assert provider.describe("fmp-1-llm").status == CloudStatus.NOT_FOUND
    provider.delete("fmp-1-llm")  # already gone: not an error
    assert provider.list_nodes("fmp-1-llm") == []


def test_create_is_idempotent_by_name(session):
    provider = HyperPodProvider(session)
    first = provider.create(spec())
    second = provider.create(spec())
    assert first.cloud_id == second.cloud_id
    assert len(session.client("sagemaker").list_clusters()["ClusterSummaries"]) == 1


def test_create_request_carries_groups_lifecycle_vpc_and_threads_per_core(session):
    request = HyperPodProvider(session).create_request(spec(threads_per_core=2))
    controller, workers = request["InstanceGroups"]
    assert controller["InstanceType"] == "ml.m5.12xlarge"
    assert workers == {
        "InstanceGroupName": "workers-p5",
        "InstanceType": "ml.p5.48xlarge",
        "InstanceCount": 2,
        "LifeCycleConfig": {"SourceS3Uri": LIFECYCLE, "OnCreate": "on_create.sh"},
        "ExecutionRole": "arn:aws:iam::111122223333:role/HyperPodExecution",
        "ThreadsPerCore": 2,
    }
    assert request["VpcConfig"] == {"SecurityGroupIds": ["sg-0abc1234"], "Subnets": ["subnet-0abc1234"]}
    assert "Orchestrator" not in request


def test_eks_orchestrator_drops_the_slurm_controller_and_names_the_eks_cluster(session):
    eks_arn = "arn:aws:eks:us-east-1:111122223333:cluster/training"
    request = HyperPodProvider(session, orchestrator="eks").create_request(spec(eks_cluster_arn=eks_arn))
    assert [g["InstanceGroupName"] for g in request["InstanceGroups"]] == ["workers-p5"]
    assert request["Orchestrator"] == {"Eks": {"ClusterArn": eks_arn}}
    with pytest.raises(PermanentCloudError, match="EKS cluster"):
        HyperPodProvider(session, orchestrator="eks").create_request(spec())


def test_throttling_is_retried_with_backoff_inside_the_call(session, no_sleep):
    provider = HyperPodProvider(session)
    provider.create(spec())
    calls = throttle(session.client("sagemaker"), "DescribeCluster", times=2)

    assert provider.describe("fmp-1-llm").status == CloudStatus.IN_SERVICE
    assert len(calls) == 3  # two throttled, the third reached the service
    assert len(no_sleep) == 2  # botocore backed off before each retry


def test_throttling_that_outlasts_the_retries_is_a_transient_error(session, no_sleep):
    throttle(session.client("sagemaker"), "DescribeCluster", times=100)
    with pytest.raises(TransientCloudError) as raised:
        HyperPodProvider(session).describe("fmp-1-llm")
    assert raised.value.code == "ThrottlingException"
    assert len(no_sleep) == 2  # three attempts in all (the "task" profile): the first and two retries


def test_permanent_error_carries_the_clouds_message(session, no_sleep):
    with pytest.raises(PermanentCloudError) as raised:
        HyperPodProvider(session).create(spec(worker_type="p3.2xlarge"))
    assert raised.value.code == "ValidationException"
    assert "ml.p3.2xlarge" in raised.value.message
    assert no_sleep == []  # never retried
    assert session.client("sagemaker").list_clusters()["ClusterSummaries"] == []


def test_lifecycle_scripts_must_be_in_s3(session):
    with pytest.raises(PermanentCloudError, match="lifecycle scripts in S3"):
        HyperPodProvider(session).create(spec(lifecycle_s3_uri="https://example.com/x"))


def test_list_nodes_follows_every_page(session):
    """moto 5.2 paginates list_cluster_nodes wrongly (the first page forever), so the paging is proven
    with botocore's Stubber against SageMaker's real service model."""
    client = session.client("sagemaker")
    launched = datetime(2027, 1, 5, 9, 0, tzinfo=UTC)

    def node(instance_id, group="workers-p5", status="Running"):
        return {
            "InstanceGroupName": group,
            "InstanceId": instance_id,
            "InstanceType": "ml.p5.48xlarge",
            "LaunchTime": launched,
            "InstanceStatus": {"Status": status, "Message": "GPU unhealthy" if status == "Failure" else ""},
        }

    with Stubber(client) as stub:
        stub.add_response(
            "list_cluster_nodes",
            {"ClusterNodeSummaries": [node("i-0001"), node("i-0002")], "NextToken": "page-2"},
            {"ClusterName": "fmp-1-llm", "MaxResults": hyperpod.NODE_PAGE_SIZE},
        )
        stub.add_response(
            "list_cluster_nodes",
            {"ClusterNodeSummaries": [node("i-0003", status="Failure")], "NextToken": ""},
            {"ClusterName": "fmp-1-llm", "MaxResults": hyperpod.NODE_PAGE_SIZE, "NextToken": "page-2"},
        )
        nodes = HyperPodProvider(session).list_nodes("fmp-1-llm")
        stub.assert_no_pending_responses()
    assert [(n.instance_id, n.status, n.instance_type) for n in nodes] == [
        ("i-0001", "Running", "p5.48xlarge"),
        ("i-0002", "Running", "p5.48xlarge"),
        ("i-0003", "Failure", "p5.48xlarge"),
    ]
    assert nodes[2].message == "GPU unhealthy"
    assert nodes[0].launch_time == launched


def test_new_lustre_storage_is_made_with_the_cluster_once_and_deleted_with_it(session):
    from portal.cloud import StorageKind, StorageSpec

    provider = HyperPodProvider(session)
    with_storage = spec(storage=StorageSpec(kind=StorageKind.FSX_LUSTRE_NEW, capacity_gib=2400))
    provider.create(with_storage)
    provider.create(with_storage)  # a retried task
    fsx = session.client("fsx")
    (fs,) = fsx.describe_file_systems()["FileSystems"]
    assert {"Key": "Name", "Value": "fmp-1-llm"} in fs["Tags"]
    assert len(session.client("sagemaker").list_clusters()["ClusterSummaries"]) == 1

    provider.delete("fmp-1-llm", storage_kind=StorageKind.FSX_LUSTRE_NEW)
    assert fsx.describe_file_systems()["FileSystems"] == []


def test_slurm_clusters_get_their_own_scripts_and_provisioning_parameters(session):
    from portal.cloud import StorageKind, StorageSpec

    provider = HyperPodProvider(session)
    provider.create(spec(storage=StorageSpec(kind=StorageKind.FSX_LUSTRE_NEW)))
    s3 = session.client("s3")
    staged = "hyperpod/clusters/fmp-1-llm/"
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="sagemaker-alpha-lifecycle")["Contents"])
    assert keys == sorted(["hyperpod/on_create.sh", staged + "on_create.sh", staged + "provisioning_parameters.json"])
    parameters = json.loads(
        s3.get_object(Bucket="sagemaker-alpha-lifecycle", Key=staged + "provisioning_parameters.json")["Body"].read()
    )
    (fs,) = session.client("fsx").describe_file_systems()["FileSystems"]
    assert parameters == {
        "version": "1.0.0",
        "workload_manager": "slurm",
        "controller_group": "controller-machine",
        "worker_groups": [{"instance_group_name": "workers-p5", "partition_name": "ml.p5.48xlarge"}],
        "fsx_dns_name": fs["DNSName"],
        "fsx_mountname": fs.get("LustreConfiguration", {}).get("MountName", ""),  # moto leaves it out
    }
    sent = session.client("sagemaker").describe_cluster(ClusterName="fmp-1-llm")["InstanceGroups"]
    assert {g["LifeCycleConfig"]["SourceS3Uri"] for g in sent} == {f"s3://sagemaker-alpha-lifecycle/{staged}"}


def test_a_missing_lifecycle_bucket_is_a_clear_permanent_error(session):
    with pytest.raises(PermanentCloudError, match="sagemaker-beta-lifecycle does not exist"):
        HyperPodProvider(session).create(spec(lifecycle_s3_uri="s3://sagemaker-beta-lifecycle/x/"))
    assert session.client("sagemaker").list_clusters()["ClusterSummaries"] == []


def test_an_html_error_page_becomes_a_short_transient_message():
    from botocore.exceptions import ClientError

    from portal.cloud.errors import classify

    page = "<!doctype html>\n<title>500 Internal Server Error</title>"
    error = ClientError(
        {"Error": {"Code": "500", "Message": page}, "ResponseMetadata": {"HTTPStatusCode": 500}},
        "CreateDataRepositoryAssociation",
    )
    classified = classify(error)
    assert isinstance(classified, TransientCloudError)
    assert classified.message == "HTTP 500 from the service (CreateDataRepositoryAssociation)"
