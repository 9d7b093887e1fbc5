"""AWS ParallelCluster 3: the portal renders the cluster configuration, validates it with the official
aws-parallelcluster library's schema before anything is sent, and creates and deletes through that library.

The library pulls in AWS CDK v1 and jsii (which needs Node.js) and pins `packaging` to 25.x, so it
is an optional extra (`pip install -r requirements-pcluster.txt`). Without it the provider still
renders configurations, describes clusters and lists nodes (plain CloudFormation and EC2 calls), and
says clearly that validation and creation need the extra.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import threading
from contextlib import contextmanager
from types import ModuleType

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from portal.cloud.errors import (
    PermanentCloudError,
    ProviderUnavailable,
    TransientCloudError,
    classify,
    error_code,
)
from portal.cloud.session import CloudSession
from portal.cloud.types import (
    CloudStatus,
    ClusterDescription,
    ClusterSpec,
    GroupRole,
    NodeInfo,
    StorageKind,
)

MISSING_LIBRARY = (
    "ParallelCluster support needs the optional aws-parallelcluster library, which is not installed "
    "here: pip install -r requirements-pcluster.txt (it also needs Node.js for AWS CDK)."
)
HEAD_NODE_TYPE = "m5.8xlarge"
DEFAULT_OS = "alinux2023"
CLUSTER_NAME_TAG = "parallelcluster:cluster-name"

_STACK_STATUS = {
    "CREATE_IN_PROGRESS": CloudStatus.CREATING,
    "CREATE_COMPLETE": CloudStatus.IN_SERVICE,
    "UPDATE_IN_PROGRESS": CloudStatus.UPDATING,
    "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS": CloudStatus.UPDATING,
    "UPDATE_COMPLETE": CloudStatus.IN_SERVICE,
    "UPDATE_ROLLBACK_IN_PROGRESS": CloudStatus.UPDATING,
    "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS": CloudStatus.UPDATING,
    "UPDATE_ROLLBACK_COMPLETE": CloudStatus.IN_SERVICE,
    "CREATE_FAILED": CloudStatus.FAILED,
    "ROLLBACK_IN_PROGRESS": CloudStatus.FAILED,
    "ROLLBACK_FAILED": CloudStatus.FAILED,
    "ROLLBACK_COMPLETE": CloudStatus.FAILED,
    "UPDATE_FAILED": CloudStatus.FAILED,
    "UPDATE_ROLLBACK_FAILED": CloudStatus.FAILED,
    "DELETE_IN_PROGRESS": CloudStatus.DELETING,
    "DELETE_FAILED": CloudStatus.FAILED,
    "DELETE_COMPLETE": CloudStatus.NOT_FOUND,
}
# EC2 instance states in HyperPod's node vocabulary, so the rest of the portal speaks one language.
_INSTANCE_STATE = {
    "pending": "Pending",
    "running": "Running",
    "shutting-down": "ShuttingDown",
    "stopping": "ShuttingDown",
    "stopped": "Failure",
}


def _resource_name(text: str) -> str:
    # Queue and compute resource names: lowercase letters, digits and hyphens, starting with a letter.
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return (name if name[:1].isalpha() else f"q-{name}")[:25]


def render_config(spec: ClusterSpec) -> dict:
    """A ParallelCluster 3 configuration: one Slurm queue per worker instance type, EFA on, a placement
    group per queue, and FSx for Lustre (new with an S3 data repository association, or existing)."""
    if not spec.subnet_ids:
        raise PermanentCloudError("ParallelCluster needs at least one subnet.", code="NoSubnet")
    head_type = next((g.instance_type for g in spec.groups if g.role == GroupRole.CONTROLLER), HEAD_NODE_TYPE)
    head_node: dict = {"InstanceType": head_type, "Networking": {"SubnetId": spec.subnet_ids[0]}}
    if spec.ssh_key_name:
        head_node["Ssh"] = {"KeyName": spec.ssh_key_name}
    if spec.security_group_ids:
        head_node["Networking"]["AdditionalSecurityGroups"] = list(spec.security_group_ids)
    queues = []
    for group in spec.groups:
        if group.role != GroupRole.WORKER:
            continue
        queue = {
            "Name": _resource_name(group.name),
            "CapacityType": "ONDEMAND",
            "ComputeResources": [
                {
                    "Name": _resource_name(group.instance_type.replace(".", "-")),
                    "InstanceType": group.instance_type,
                    # Static nodes: the allocation is reserved for this tenant, keep it up.
                    "MinCount": group.count,
                    "MaxCount": group.count,
                    "Efa": {"Enabled": True},
                    "DisableSimultaneousMultithreading": spec.threads_per_core == 1,
                }
            ],
            "Networking": {
                # EFA needs every node of a queue in one subnet, close together.
                "SubnetIds": [spec.subnet_ids[0]],
                "PlacementGroup": {"Enabled": True},
            },
        }
        if spec.security_group_ids:
            queue["Networking"]["AdditionalSecurityGroups"] = list(spec.security_group_ids)
        queues.append(queue)
    if not queues:
        raise PermanentCloudError("A ParallelCluster cluster needs at least one worker queue.", code="NoQueues")
    config: dict = {
        "Region": spec.region,
        "Image": {"Os": DEFAULT_OS},
        "HeadNode": head_node,
        "Scheduling": {"Scheduler": "slurm", "SlurmQueues": queues},
        "Tags": [{"Key": key, "Value": value} for key, value in spec.tags],
    }
    storage = spec.storage
    if storage.kind == StorageKind.FSX_EXISTING:
        config["SharedStorage"] = [
            {
                "MountDir": storage.mount_dir,
                "Name": "fsx",
                "StorageType": "FsxLustre",
                "FsxLustreSettings": {"FileSystemId": storage.file_system_id},
            }
        ]
    elif storage.kind == StorageKind.FSX_LUSTRE_NEW:
        settings: dict = {
            "StorageCapacity": storage.capacity_gib,
            "DeploymentType": "PERSISTENT_2",
            "PerUnitStorageThroughput": 250,
            "DataCompressionType": "LZ4",
        }
        if storage.s3_data_repository_path:
            settings["DataRepositoryAssociations"] = [
                {
                    "Name": "data",
                    "DataRepositoryPath": storage.s3_data_repository_path,
                    "FileSystemPath": "/data",
                    "BatchImportMetaDataOnCreate": True,
                    "AutoImportPolicy": ["NEW", "CHANGED", "DELETED"],
                }
            ]
        config["SharedStorage"] = [
            {"MountDir": storage.mount_dir, "Name": "fsx", "StorageType": "FsxLustre", "FsxLustreSettings": settings}
        ]
    return config


# The library reads process-wide state (boto3's default session, AWS_DEFAULT_REGION): one call at a time.
_library_lock = threading.Lock()


def is_installed() -> bool:
    """Whether this installation can create ParallelCluster clusters (the optional library is present)."""
    return importlib.util.find_spec("pcluster") is not None


def load_library() -> ModuleType:
    """The official library's Python API, or a clear ProviderUnavailable when the extra is missing."""
    try:
        import pcluster.lib as pcluster_lib
    except ImportError as error:
        raise ProviderUnavailable(MISSING_LIBRARY, code="ParallelClusterMissing") from error
    return pcluster_lib


def load_schema():
    try:
        from pcluster.schemas.cluster_schema import ClusterSchema
    except ImportError as error:
        raise ProviderUnavailable(MISSING_LIBRARY, code="ParallelClusterMissing") from error
    return ClusterSchema


def validate_config(config: dict, *, name: str) -> None:
    """Check the configuration against the library's own marshmallow schema; no AWS call is made."""
    schema = load_schema()
    from marshmallow import ValidationError

    # The schema reads the region from the environment, as the pcluster CLI does; the lock keeps two
    # threads from seeing each other's region.
    with _library_lock, _environment(AWS_DEFAULT_REGION=config["Region"]):
        try:
            schema(cluster_name=name).load(config)
        except ValidationError as error:
            raise PermanentCloudError(
                f"The ParallelCluster configuration is invalid: {error.messages}", code="InvalidConfiguration"
            ) from error


@contextmanager
def _environment(**values: str):
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def _as_tenant(session: CloudSession):
    """The library builds its clients from boto3's default session: point that at the tenant's assumed
    role for the duration of one call. A process-wide lock keeps two tenants from ever sharing it."""
    with _library_lock:
        saved = boto3.DEFAULT_SESSION
        boto3.DEFAULT_SESSION = session.boto3_session
        try:
            with _environment(AWS_DEFAULT_REGION=session.region):
                try:
                    from pcluster.aws.aws_api import AWSApi

                    AWSApi.reset()  # drop clients cached with another tenant's credentials
                except ImportError:
                    pass
                yield
        finally:
            boto3.DEFAULT_SESSION = saved


class ParallelClusterProvider:
    def __init__(self, session: CloudSession, *, library: ModuleType | None = None) -> None:
        self.session = session
        self._library = library

    @property
    def library(self) -> ModuleType:
        if self._library is None:
            self._library = load_library()
        return self._library

    def create(self, spec: ClusterSpec) -> ClusterDescription:
        config = render_config(spec)
        validate_config(config, name=spec.name)  # before anything is sent
        existing = self.describe(spec.name)
        if existing.status != CloudStatus.NOT_FOUND:
            return existing  # a retried task adopts the stack it created before
        library = self.library
        with _as_tenant(self.session):
            _call_library(
                library.create_cluster,
                cluster_name=spec.name,
                cluster_configuration=config,
                region=spec.region,
                rollback_on_failure=False,
            )
        return self.describe(spec.name)

    def describe(self, name: str) -> ClusterDescription:
        try:
            stacks = self.session.client("cloudformation").describe_stacks(StackName=name)["Stacks"]
        except ClientError as error:
            if error_code(error) == "ValidationError" and "does not exist" in str(error):
                return ClusterDescription(name=name, status=CloudStatus.NOT_FOUND)
            raise classify(error) from error
        except BotoCoreError as error:
            raise classify(error) from error
        stack = stacks[0]
        raw = stack["StackStatus"]
        status = _STACK_STATUS.get(raw, CloudStatus.UPDATING)
        return ClusterDescription(
            name=name,
            cloud_id=stack["StackId"],
            status=status,
            raw_status=raw,
            failure_message=(stack.get("StackStatusReason", "") or "") if status == CloudStatus.FAILED else "",
        )

    def list_nodes(self, name: str) -> list[NodeInfo]:
        """Head and compute nodes are EC2 instances tagged with the cluster name."""
        ec2 = self.session.client("ec2")
        nodes: list[NodeInfo] = []
        try:
            paginator = ec2.get_paginator("describe_instances")
            pages = paginator.paginate(
                Filters=[
                    {"Name": f"tag:{CLUSTER_NAME_TAG}", "Values": [name]},
                    {"Name": "instance-state-name", "Values": list(_INSTANCE_STATE)},
                ]
            )
            for page in pages:
                for reservation in page["Reservations"]:
                    for instance in reservation["Instances"]:
                        tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
                        group = tags.get("parallelcluster:queue-name") or tags.get("parallelcluster:node-type", "")
                        nodes.append(
                            NodeInfo(
                                instance_id=instance["InstanceId"],
                                group=group,
                                instance_type=instance["InstanceType"],
                                status=_INSTANCE_STATE[instance["State"]["Name"]],
                                launch_time=instance.get("LaunchTime"),
                                hostname=instance.get("PrivateDnsName", "") or "",
                            )
                        )
            impaired = self._impaired([n.instance_id for n in nodes if n.status == "Running"])
        except ClientError as error:
            raise classify(error) from error
        except BotoCoreError as error:
            raise classify(error) from error
        return [
            dataclasses.replace(n, status="Failure", message="EC2 status checks: impaired")
            if n.instance_id in impaired
            else n
            for n in nodes
        ]

    def _impaired(self, instance_ids: list[str]) -> set[str]:
        ec2 = self.session.client("ec2")
        impaired = set()
        for start in range(0, len(instance_ids), 100):
            answer = ec2.describe_instance_status(InstanceIds=instance_ids[start : start + 100])
            for status in answer.get("InstanceStatuses", []):
                checks = (status.get("InstanceStatus", {}).get("Status"), status.get("SystemStatus", {}).get("Status"))
                if "impaired" in checks:
                    impaired.add(status["InstanceId"])
        return impaired

    def delete(self, name: str, *, storage_kind: StorageKind = StorageKind.NONE) -> None:
        # The library also stops the compute fleet that Slurm launched outside CloudFormation;
        # a bare delete_stack would leave those instances running, so there is no fallback.
        if self.describe(name).status in (CloudStatus.NOT_FOUND, CloudStatus.DELETING):
            return
        library = self.library
        with _as_tenant(self.session):
            _call_library(library.delete_cluster, cluster_name=name, region=self.session.region)


# The library raises its own API exceptions (pcluster.api.errors); sort them by name so this module
# imports nothing from the optional package at load time.
_LIBRARY_TRANSIENT = {"LimitExceededException", "InternalServiceException"}
_LIBRARY_ALREADY_DONE = {"ConflictException", "NotFoundException"}  # exists already / gone already


def _call_library(function, **kwargs):
    try:
        return function(**kwargs)
    except (ClientError, BotoCoreError) as error:
        raise classify(error) from error
    except Exception as error:
        name = type(error).__name__
        content = getattr(error, "content", None)
        message = str(getattr(content, "message", "") or error)
        if name in _LIBRARY_ALREADY_DONE:
            return None
        if name in _LIBRARY_TRANSIENT:
            raise TransientCloudError(message, code=name) from error
        raise PermanentCloudError(message, code=name) from error
