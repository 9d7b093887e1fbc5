"""SageMaker HyperPod clusters, with the Slurm or the EKS orchestrator."""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError

from portal.cloud.errors import CloudError, PermanentCloudError, classify, error_code
from portal.cloud.lifecycle import stage_lifecycle
from portal.cloud.session import CloudSession
from portal.cloud.storage import delete_storage, ensure_storage
from portal.cloud.types import (
    CloudStatus,
    ClusterDescription,
    ClusterSpec,
    GroupRole,
    GroupStatus,
    NodeInfo,
    StorageKind,
    ec2_type,
    ml_type,
)

_STATUS = {
    "Creating": CloudStatus.CREATING,
    "InService": CloudStatus.IN_SERVICE,
    "Updating": CloudStatus.UPDATING,
    "SystemUpdating": CloudStatus.UPDATING,
    "Failed": CloudStatus.FAILED,
    "RollingBack": CloudStatus.FAILED,
    "Deleting": CloudStatus.DELETING,
}
NODE_PAGE_SIZE = 100


def _is_not_found(error: ClientError) -> bool:
    # AWS answers ResourceNotFound; the emulator a ValidationException "Could not find cluster".
    code = error_code(error)
    message = error.response.get("Error", {}).get("Message", "")
    return code == "ResourceNotFound" or (code == "ValidationException" and "Could not find" in message)


def _words(message: str | None) -> str:
    """The cloud's message about a node, or "" when it says nothing: the emulator answers the literal "message"."""
    message = (message or "").strip()
    return "" if message.lower() == "message" else message


class HyperPodProvider:
    """create / describe / list nodes / delete for one HyperPod cluster, by its deterministic name."""

    def __init__(self, session: CloudSession, *, orchestrator: str = "slurm") -> None:
        self.session = session
        self.orchestrator = orchestrator

    @property
    def client(self):
        return self.session.client("sagemaker")

    def create_request(self, spec: ClusterSpec) -> dict:
        """The create_cluster parameters: public so tests and the API schema can see what is sent."""
        if not spec.lifecycle_s3_uri.startswith("s3://"):
            raise PermanentCloudError("HyperPod needs lifecycle scripts in S3 (an s3:// URI).", code="NoLifecycle")
        if not spec.execution_role_arn:
            raise PermanentCloudError("HyperPod needs an execution role ARN for its instances.", code="NoRole")
        groups = []
        for group in spec.groups:
            if self.orchestrator == "eks" and group.role == GroupRole.CONTROLLER:
                continue  # EKS runs the control plane; Slurm needs its controller group
            groups.append(
                {
                    "InstanceGroupName": group.name,
                    "InstanceType": ml_type(group.instance_type),
                    "InstanceCount": group.count,
                    "LifeCycleConfig": {"SourceS3Uri": spec.lifecycle_s3_uri, "OnCreate": "on_create.sh"},
                    "ExecutionRole": spec.execution_role_arn,
                    # One thread per core: what distributed training wants (no SMT contention).
                    "ThreadsPerCore": spec.threads_per_core,
                }
            )
        request = {
            "ClusterName": spec.name,
            "InstanceGroups": groups,
            "VpcConfig": {"SecurityGroupIds": list(spec.security_group_ids), "Subnets": list(spec.subnet_ids)},
            "Tags": [{"Key": key, "Value": value} for key, value in spec.tags],
            "NodeRecovery": "Automatic",
        }
        if self.orchestrator == "eks":
            if not spec.eks_cluster_arn:
                raise PermanentCloudError("HyperPod on EKS needs the EKS cluster's ARN.", code="NoEksCluster")
            request["Orchestrator"] = {"Eks": {"ClusterArn": spec.eks_cluster_arn}}
        return request

    def create(self, spec: ClusterSpec) -> ClusterDescription:
        """Idempotent: if a cluster with this name exists (a retried task), it is returned, not recreated."""
        existing = self.describe(spec.name)
        if existing.status != CloudStatus.NOT_FOUND:
            return existing
        request = self.create_request(spec)  # refuses a bad spec before anything is made
        storage = None
        if spec.storage.kind != StorageKind.NONE:
            subnet = spec.subnet_ids[0] if spec.subnet_ids else ""
            storage = ensure_storage(
                self.session,
                name=spec.name,
                spec=spec.storage,
                subnet_id=subnet,
                security_group_ids=spec.security_group_ids,
            )
        if self.orchestrator == "slurm":
            # Slurm's lifecycle scripts learn the groups and the file system from the parameters file.
            staged = stage_lifecycle(self.session, spec, storage)
            for group in request["InstanceGroups"]:
                group["LifeCycleConfig"]["SourceS3Uri"] = staged
        try:
            self.client.create_cluster(**request)
        except ClientError as error:
            if error_code(error) != "ResourceInUse":  # lost a race with a redelivered twin: adopt it
                raise classify(error) from error
        except BotoCoreError as error:
            raise classify(error) from error
        return self.describe(spec.name)

    def describe(self, name: str) -> ClusterDescription:
        try:
            answer = self.client.describe_cluster(ClusterName=name)
        except ClientError as error:
            if _is_not_found(error):
                return ClusterDescription(name=name, status=CloudStatus.NOT_FOUND)
            raise classify(error) from error
        except BotoCoreError as error:
            raise classify(error) from error
        raw = answer.get("ClusterStatus", "")
        if raw not in _STATUS:
            raise CloudError(f"Unknown HyperPod cluster status {raw!r}.", code="UnknownStatus")
        return ClusterDescription(
            name=answer["ClusterName"],
            cloud_id=answer["ClusterArn"],
            status=_STATUS[raw],
            raw_status=raw,
            failure_message=answer.get("FailureMessage", "") or "",
            groups=tuple(
                GroupStatus(
                    name=g["InstanceGroupName"],
                    instance_type=ec2_type(g["InstanceType"]),
                    current_count=g.get("CurrentCount", 0),
                    target_count=g.get("TargetCount", 0),
                )
                for g in answer.get("InstanceGroups", [])
            ),
        )

    def list_nodes(self, name: str) -> list[NodeInfo]:
        nodes: list[NodeInfo] = []
        params = {"ClusterName": name, "MaxResults": NODE_PAGE_SIZE}
        try:
            while True:
                page = self.client.list_cluster_nodes(**params)
                for node in page.get("ClusterNodeSummaries", []):
                    status = node.get("InstanceStatus", {})
                    nodes.append(
                        NodeInfo(
                            instance_id=node["InstanceId"],
                            group=node["InstanceGroupName"],
                            instance_type=ec2_type(node["InstanceType"]),
                            status=status.get("Status", ""),
                            message=_words(status.get("Message", "")),
                            launch_time=node.get("LaunchTime"),
                            hostname=node.get("PrivateDnsHostname", "") or "",
                        )
                    )
                token = page.get("NextToken")
                # A token seen before means the service is looping (moto 5.2's list_cluster_nodes
                # returns its first page forever): stop instead of spinning.
                if not token or token == params.get("NextToken"):
                    return list({n.instance_id: n for n in nodes}.values())
                params["NextToken"] = token
        except ClientError as error:
            if _is_not_found(error):
                return []
            raise classify(error) from error
        except BotoCoreError as error:
            raise classify(error) from error

    def delete(self, name: str, *, storage_kind: StorageKind = StorageKind.NONE) -> None:
        """Idempotent: deleting a cluster that is already gone is not an error."""
        try:
            self.client.delete_cluster(ClusterName=name)
        except ClientError as error:
            if not _is_not_found(error):
                raise classify(error) from error
        except BotoCoreError as error:
            raise classify(error) from error
        if storage_kind == StorageKind.FSX_LUSTRE_NEW:
            delete_storage(self.session, name=name)
