"""ParallelCluster: configuration rendering, the official schema, the library boundary, and describe / list nodes
through CloudFormation and EC2.

The schema and create tests need the optional aws-parallelcluster library (requirements-pcluster.txt), which is not
in the default install: `make test` skips them without it, `make test-pcluster` runs this file in a virtualenv of its
own that has it (.ci/run does, where a missing library fails them: tests.environment)."""

import sys
from datetime import UTC, datetime

import pytest
from botocore.stub import Stubber

from portal.cloud import (
    CloudStatus,
    ClusterSpec,
    GroupRole,
    GroupSpec,
    PermanentCloudError,
    ProviderUnavailable,
    StorageKind,
    StorageSpec,
    TransientCloudError,
)
from portal.cloud.parallelcluster import ParallelClusterProvider, render_config, validate_config
from tests.environment import import_or_unavailable


@pytest.fixture
def pcluster():
    """The official library, present: its schema validates every configuration create() sends."""
    return import_or_unavailable(
        "pcluster.schemas.cluster_schema",
        "the optional aws-parallelcluster library is not installed (requirements-pcluster.txt: make test-pcluster)",
    )


def spec(storage=None, **overrides):
    values = dict(
        name="fmp-7-pretrain",
        region="us-east-1",
        groups=(
            GroupSpec("head-node", "m5.8xlarge", 1, GroupRole.CONTROLLER),
            GroupSpec("workers-p5-48xlarge", "p5.48xlarge", 4, GroupRole.WORKER),
            GroupSpec("workers-trn1-32xlarge", "trn1.32xlarge", 2, GroupRole.WORKER),
        ),
        subnet_ids=("subnet-12345678",),
        security_group_ids=("sg-12345678",),
        ssh_key_name="training",
        storage=storage
        or StorageSpec(kind=StorageKind.FSX_LUSTRE_NEW, s3_data_repository_path="s3://corpus/ja/", capacity_gib=2400),
    )
    values.update(overrides)
    return ClusterSpec(**values)


def test_config_has_a_queue_per_instance_type_with_efa_and_placement_group():
    config = render_config(spec())
    assert config["HeadNode"]["InstanceType"] == "m5.8xlarge"
    queues = config["Scheduling"]["SlurmQueues"]
    assert [q["Name"] for q in queues] == ["workers-p5-48xlarge", "workers-trn1-32xlarge"]
    p5 = queues[0]["ComputeResources"][0]
    assert p5["InstanceType"] == "p5.48xlarge"
    assert (p5["MinCount"], p5["MaxCount"]) == (4, 4)
    assert p5["Efa"] == {"Enabled": True}
    assert queues[0]["Networking"]["PlacementGroup"] == {"Enabled": True}
    assert config["Scheduling"]["Scheduler"] == "slurm"


def test_config_mounts_new_lustre_linked_to_s3():
    (storage,) = render_config(spec())["SharedStorage"]
    assert storage["StorageType"] == "FsxLustre"
    settings = storage["FsxLustreSettings"]
    assert settings["StorageCapacity"] == 2400
    assert settings["DataRepositoryAssociations"][0]["DataRepositoryPath"] == "s3://corpus/ja/"
    assert settings["DataRepositoryAssociations"][0]["FileSystemPath"] == "/data"


def test_config_mounts_an_existing_file_system_by_id():
    existing = StorageSpec(kind=StorageKind.FSX_EXISTING, file_system_id="fs-0123456789abcdef0")
    (storage,) = render_config(spec(storage=existing))["SharedStorage"]
    assert storage["FsxLustreSettings"] == {"FileSystemId": "fs-0123456789abcdef0"}


def test_config_without_workers_is_refused():
    with pytest.raises(PermanentCloudError, match="worker queue"):
        render_config(spec(groups=(GroupSpec("head-node", "m5.8xlarge", 1, GroupRole.CONTROLLER),)))


def test_missing_library_is_named_clearly(monkeypatch):
    # Simulate a deployment without the optional extra, whether or not this machine has it.
    for module in ("pcluster", "pcluster.lib", "pcluster.schemas", "pcluster.schemas.cluster_schema"):
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ProviderUnavailable, match="requirements-pcluster.txt"):
        validate_config(render_config(spec()), name="fmp-7-pretrain")
    with pytest.raises(ProviderUnavailable, match="aws-parallelcluster"):
        ParallelClusterProvider(session=None).library  # noqa: B018


def test_official_schema_accepts_the_rendered_config_and_rejects_a_broken_one(pcluster):
    validate_config(render_config(spec()), name="fmp-7-pretrain")
    broken = render_config(spec())
    del broken["Scheduling"]["SlurmQueues"][0]["Networking"]
    with pytest.raises(PermanentCloudError, match="Networking"):
        validate_config(broken, name="fmp-7-pretrain")


class FakeLibrary:
    """Stands in for pcluster.lib at its boundary: records calls, raises the library's own error shapes."""

    def __init__(self, error=None):
        self.calls = []
        self.error = error

    def create_cluster(self, **kwargs):
        self.calls.append(("create", kwargs))
        if self.error:
            raise self.error
        return {"cluster": {"clusterName": kwargs["cluster_name"], "clusterStatus": "CREATE_IN_PROGRESS"}}

    def delete_cluster(self, **kwargs):
        self.calls.append(("delete", kwargs))
        return {"cluster": {"clusterName": kwargs["cluster_name"], "clusterStatus": "DELETE_IN_PROGRESS"}}


def stack(status, reason=""):
    body = {
        "StackName": "fmp-7-pretrain",
        "StackId": "arn:aws:cloudformation:us-east-1:111122223333:stack/fmp-7-pretrain/1",
        "CreationTime": datetime(2027, 1, 5, tzinfo=UTC),
        "StackStatus": status,
    }
    if reason:
        body["StackStatusReason"] = reason
    return {"Stacks": [body]}


def not_found(stub):
    stub.add_client_error(
        "describe_stacks",
        service_error_code="ValidationError",
        service_message="Stack with id fmp-7-pretrain does not exist",
        http_status_code=400,
        expected_params={"StackName": "fmp-7-pretrain"},
    )


def test_create_goes_through_the_library_once(session, pcluster):
    # The official schema checks the configuration first (no stub): what reaches the library passed it.
    library = FakeLibrary()
    provider = ParallelClusterProvider(session, library=library)
    with Stubber(session.client("cloudformation")) as stub:
        not_found(stub)
        stub.add_response("describe_stacks", stack("CREATE_IN_PROGRESS"), {"StackName": "fmp-7-pretrain"})
        assert provider.create(spec()).status == CloudStatus.CREATING
        # A retried task finds the stack and does not call the library again.
        stub.add_response("describe_stacks", stack("CREATE_IN_PROGRESS"), {"StackName": "fmp-7-pretrain"})
        assert provider.create(spec()).status == CloudStatus.CREATING
    ((action, kwargs),) = library.calls
    assert action == "create"
    assert kwargs["cluster_name"] == "fmp-7-pretrain"
    assert kwargs["cluster_configuration"]["Scheduling"]["SlurmQueues"][0]["ComputeResources"][0]["Efa"]


def test_an_invalid_configuration_is_refused_before_anything_is_sent(session, pcluster):
    """The official schema refuses a file system id of the wrong shape: no CloudFormation call (the stubber has
    no answer queued, so one would fail the test) and no library call."""
    library = FakeLibrary()
    provider = ParallelClusterProvider(session, library=library)
    existing = StorageSpec(kind=StorageKind.FSX_EXISTING, file_system_id="fs-not-an-id")
    with Stubber(session.client("cloudformation")) as stub:
        with pytest.raises(PermanentCloudError, match="FileSystemId") as refused:
            provider.create(spec(storage=existing))
        stub.assert_no_pending_responses()
    assert refused.value.code == "InvalidConfiguration"
    assert library.calls == []


def test_library_errors_are_sorted_into_transient_and_permanent(session, pcluster):
    class LimitExceededException(Exception):
        pass

    class CreateClusterBadRequestException(Exception):
        def __init__(self, message):
            self.content = type("Content", (), {"message": message})()

    for error, expected in (
        (LimitExceededException("Rate exceeded"), TransientCloudError),
        (CreateClusterBadRequestException("Invalid cluster configuration: bad subnet"), PermanentCloudError),
    ):
        provider = ParallelClusterProvider(session, library=FakeLibrary(error=error))
        with Stubber(session.client("cloudformation")) as stub:
            not_found(stub)
            with pytest.raises(expected) as raised:
                provider.create(spec())
        assert raised.type is expected
    assert "bad subnet" in raised.value.message


@pytest.mark.parametrize(
    "status,expected",
    [
        ("CREATE_IN_PROGRESS", CloudStatus.CREATING),
        ("CREATE_COMPLETE", CloudStatus.IN_SERVICE),
        ("UPDATE_IN_PROGRESS", CloudStatus.UPDATING),
        ("ROLLBACK_COMPLETE", CloudStatus.FAILED),
        ("DELETE_IN_PROGRESS", CloudStatus.DELETING),
    ],
)
def test_stack_status_maps_onto_the_lifecycle(session, status, expected):
    with Stubber(session.client("cloudformation")) as stub:
        reason = "The following resource(s) failed to create: [HeadNode]." if expected == CloudStatus.FAILED else ""
        stub.add_response("describe_stacks", stack(status, reason), {"StackName": "fmp-7-pretrain"})
        description = ParallelClusterProvider(session).describe("fmp-7-pretrain")
    assert description.status == expected
    assert description.failure_message == reason


def test_missing_stack_is_not_found(session):
    with Stubber(session.client("cloudformation")) as stub:
        not_found(stub)
        assert ParallelClusterProvider(session).describe("fmp-7-pretrain").status == CloudStatus.NOT_FOUND


def test_nodes_are_the_clusters_tagged_instances_and_impaired_ones_fail(session):
    ec2 = session.client("ec2")

    def launch(node_type, queue, count):
        tags = [{"Key": "parallelcluster:cluster-name", "Value": "fmp-7-pretrain"}]
        tags += [{"Key": "parallelcluster:node-type", "Value": node_type}]
        if queue:
            tags.append({"Key": "parallelcluster:queue-name", "Value": queue})
        return ec2.run_instances(
            ImageId="ami-12c6146b",
            InstanceType="p5.48xlarge" if queue else "m5.8xlarge",
            MinCount=count,
            MaxCount=count,
            TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
        )["Instances"]

    launch("HeadNode", "", 1)
    workers = launch("Compute", "workers-p5-48xlarge", 2)
    ec2.run_instances(ImageId="ami-12c6146b", InstanceType="t3.micro", MinCount=1, MaxCount=1)  # not ours

    nodes = ParallelClusterProvider(session).list_nodes("fmp-7-pretrain")
    assert sorted((n.group, n.instance_type, n.status) for n in nodes) == [
        ("HeadNode", "m5.8xlarge", "Running"),
        ("workers-p5-48xlarge", "p5.48xlarge", "Running"),
        ("workers-p5-48xlarge", "p5.48xlarge", "Running"),
    ]

    ec2.stop_instances(InstanceIds=[workers[0]["InstanceId"]])
    statuses = {n.instance_id: n.status for n in ParallelClusterProvider(session).list_nodes("fmp-7-pretrain")}
    assert statuses[workers[0]["InstanceId"]] == "Failure"
