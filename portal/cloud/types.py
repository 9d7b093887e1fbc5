"""Typed requests and results of the cloud layer: views and services never see a raw boto3 dict."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime


class CloudStatus(enum.StrEnum):
    """A provider's cluster status, mapped from each service's own vocabulary."""

    CREATING = "creating"
    IN_SERVICE = "in_service"
    UPDATING = "updating"
    FAILED = "failed"
    DELETING = "deleting"
    NOT_FOUND = "not_found"


class GroupRole(enum.StrEnum):
    CONTROLLER = "controller"
    LOGIN = "login"
    WORKER = "worker"


class StorageKind(enum.StrEnum):
    NONE = "none"
    FSX_LUSTRE_NEW = "fsx_lustre_new"  # a new FSx for Lustre file system linked to S3
    FSX_EXISTING = "fsx_existing"  # an existing file system id


@dataclass(frozen=True)
class GroupSpec:
    name: str
    instance_type: str  # the EC2 name (p5.48xlarge); providers add their own prefix (ml.)
    count: int
    role: GroupRole = GroupRole.WORKER


@dataclass(frozen=True)
class StorageSpec:
    kind: StorageKind = StorageKind.NONE
    file_system_id: str = ""
    s3_data_repository_path: str = ""  # s3://bucket/prefix linked as /fsx/data
    capacity_gib: int = 1200
    mount_dir: str = "/fsx"


@dataclass(frozen=True)
class ClusterSpec:
    """Everything a provider needs to create one cluster; `name` is deterministic per attempt."""

    name: str
    region: str
    groups: tuple[GroupSpec, ...]
    subnet_ids: tuple[str, ...]
    security_group_ids: tuple[str, ...] = ()
    lifecycle_s3_uri: str = ""
    execution_role_arn: str = ""
    threads_per_core: int = 1
    eks_cluster_arn: str = ""  # HyperPod with the EKS orchestrator
    storage: StorageSpec = field(default_factory=StorageSpec)
    tags: tuple[tuple[str, str], ...] = ()
    ssh_key_name: str = ""  # ParallelCluster head node


@dataclass(frozen=True)
class GroupStatus:
    name: str
    instance_type: str
    current_count: int
    target_count: int


@dataclass(frozen=True)
class ClusterDescription:
    name: str
    status: CloudStatus
    cloud_id: str = ""  # ARN or stack id
    raw_status: str = ""
    failure_message: str = ""
    groups: tuple[GroupStatus, ...] = ()


@dataclass(frozen=True)
class NodeInfo:
    instance_id: str
    group: str
    instance_type: str  # EC2 name, prefix removed
    status: str  # the cloud's word: Running, Failure, Pending, NotFound, …
    launch_time: datetime | None
    message: str = ""
    hostname: str = ""  # private DNS host name (HyperPod's PrivateDnsHostname, EC2's PrivateDnsName), when given


@dataclass(frozen=True)
class FileSystemInfo:
    file_system_id: str
    dns_name: str = ""
    mount_name: str = ""
    lifecycle: str = ""
    data_repository_association_id: str = ""


def ml_type(instance_type: str) -> str:
    """SageMaker's name for an EC2 instance type: p5.48xlarge → ml.p5.48xlarge."""
    return instance_type if instance_type.startswith("ml.") else f"ml.{instance_type}"


def ec2_type(instance_type: str) -> str:
    return instance_type.removeprefix("ml.")
