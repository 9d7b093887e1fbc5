"""FSx for Lustre shared storage: a new file system linked to S3, or one the tenant already has."""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError

from portal.cloud.errors import PermanentCloudError, classify, error_code
from portal.cloud.session import CloudSession
from portal.cloud.types import FileSystemInfo, StorageKind, StorageSpec

DATA_PATH = "/data"  # where the S3 data repository appears inside the file system


def _info(fs: dict, association_id: str = "") -> FileSystemInfo:
    return FileSystemInfo(
        file_system_id=fs["FileSystemId"],
        dns_name=fs.get("DNSName", ""),
        mount_name=fs.get("LustreConfiguration", {}).get("MountName", ""),
        lifecycle=fs.get("Lifecycle", ""),
        data_repository_association_id=association_id,
    )


def _find_by_name(fsx, name: str) -> dict | None:
    token = None
    while True:
        page = fsx.describe_file_systems(**({"NextToken": token} if token else {}))
        for fs in page.get("FileSystems", []):
            if {"Key": "Name", "Value": name} in fs.get("Tags", []):
                return fs
        token = page.get("NextToken")
        if not token:
            return None


def ensure_storage(
    session: CloudSession, *, name: str, spec: StorageSpec, subnet_id: str, security_group_ids: tuple[str, ...]
) -> FileSystemInfo | None:
    """Idempotent: a rerun finds the file system (tagged Name=<cluster name>) instead of making a second."""
    if spec.kind == StorageKind.NONE:
        return None
    fsx = session.client("fsx")
    try:
        if spec.kind == StorageKind.FSX_EXISTING:
            missing = PermanentCloudError(
                f"File system {spec.file_system_id} does not exist in this account and region.",
                code="FileSystemNotFound",
            )
            try:
                found = fsx.describe_file_systems(FileSystemIds=[spec.file_system_id])["FileSystems"]
            except ClientError as error:
                if error_code(error) == "FileSystemNotFound":
                    raise missing from error
                raise
            if not found:  # AWS answers FileSystemNotFound; the emulator an empty list
                raise missing
            return _info(found[0])
        fs = _find_by_name(fsx, name)
        if fs is None:
            fs = fsx.create_file_system(
                # The token makes AWS itself answer a repeated create with the same file system.
                ClientRequestToken=name[:63],
                FileSystemType="LUSTRE",
                StorageCapacity=spec.capacity_gib,
                SubnetIds=[subnet_id],
                SecurityGroupIds=list(security_group_ids),
                LustreConfiguration={
                    "DeploymentType": "PERSISTENT_2",
                    "PerUnitStorageThroughput": 250,
                    "DataCompressionType": "LZ4",
                },
                Tags=[{"Key": "Name", "Value": name}, {"Key": "fm-portal:cluster", "Value": name}],
            )["FileSystem"]
        association_id = ""
        if spec.s3_data_repository_path:
            association_id = ensure_data_repository_association(
                fsx, file_system_id=fs["FileSystemId"], s3_path=spec.s3_data_repository_path, token=name
            )
        return _info(fs, association_id)
    except (ClientError, BotoCoreError) as error:
        raise classify(error) from error


def ensure_data_repository_association(fsx, *, file_system_id: str, s3_path: str, token: str) -> str:
    """Link the S3 prefix at /data, importing and exporting changes both ways; never twice."""
    existing = fsx.describe_data_repository_associations(
        Filters=[{"Name": "file-system-id", "Values": [file_system_id]}]
    ).get("Associations", [])
    for association in existing:
        if association.get("DataRepositoryPath") == s3_path:
            return association["AssociationId"]
    events = ["NEW", "CHANGED", "DELETED"]
    created = fsx.create_data_repository_association(
        ClientRequestToken=f"{token}-dra"[:63],
        FileSystemId=file_system_id,
        FileSystemPath=DATA_PATH,
        DataRepositoryPath=s3_path,
        BatchImportMetaDataOnCreate=True,
        S3={"AutoImportPolicy": {"Events": events}, "AutoExportPolicy": {"Events": events}},
    )
    return created["Association"]["AssociationId"]


def delete_storage(session: CloudSession, *, name: str) -> None:
    """Delete the file system this portal created for the cluster (never an existing one it was given)."""
    fsx = session.client("fsx")
    try:
        fs = _find_by_name(fsx, name)
        if fs is not None and fs.get("Lifecycle") not in ("DELETING",):
            fsx.delete_file_system(FileSystemId=fs["FileSystemId"], ClientRequestToken=f"{name}-delete"[:63])
    except ClientError as error:
        if error_code(error) == "FileSystemNotFound":
            return
        raise classify(error) from error
    except BotoCoreError as error:
        raise classify(error) from error
