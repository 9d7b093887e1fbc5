"""FSx for Lustre: created under moto; the S3 data repository association (which moto lacks) through
botocore's Stubber against the real FSx service model."""

import pytest
from botocore.stub import Stubber

from portal.cloud import PermanentCloudError, StorageKind, StorageSpec
from portal.cloud.storage import delete_storage, ensure_data_repository_association, ensure_storage


def test_new_lustre_file_system_is_created_once(session):
    spec = StorageSpec(kind=StorageKind.FSX_LUSTRE_NEW, capacity_gib=2400)
    first = ensure_storage(session, name="fmp-1-llm", spec=spec, subnet_id="subnet-0abc1234", security_group_ids=())
    again = ensure_storage(session, name="fmp-1-llm", spec=spec, subnet_id="subnet-0abc1234", security_group_ids=())
    assert first.file_system_id.startswith("fs-")
    assert again.file_system_id == first.file_system_id  # a rerun finds it by its Name tag
    systems = session.client("fsx").describe_file_systems()["FileSystems"]
    assert len(systems) == 1
    assert systems[0]["StorageCapacity"] == 2400
    assert systems[0]["LustreConfiguration"]["DeploymentType"] == "PERSISTENT_2"

    delete_storage(session, name="fmp-1-llm")
    delete_storage(session, name="fmp-1-llm")  # gone already: fine
    assert session.client("fsx").describe_file_systems()["FileSystems"] == []


def test_no_storage_creates_nothing(session):
    assert ensure_storage(session, name="x", spec=StorageSpec(), subnet_id="s", security_group_ids=()) is None


def test_existing_file_system_is_looked_up_not_created(session):
    fs = session.client("fsx").create_file_system(
        FileSystemType="LUSTRE", StorageCapacity=1200, SubnetIds=["subnet-0abc1234"]
    )["FileSystem"]
    spec = StorageSpec(kind=StorageKind.FSX_EXISTING, file_system_id=fs["FileSystemId"])
    info = ensure_storage(session, name="fmp-2-x", spec=spec, subnet_id="subnet-0abc1234", security_group_ids=())
    assert info.file_system_id == fs["FileSystemId"]
    assert len(session.client("fsx").describe_file_systems()["FileSystems"]) == 1


def test_missing_existing_file_system_is_a_clear_permanent_error(session):
    spec = StorageSpec(kind=StorageKind.FSX_EXISTING, file_system_id="fs-0123456789abcdef0")
    with pytest.raises(PermanentCloudError, match="fs-0123456789abcdef0"):
        ensure_storage(session, name="fmp-3-x", spec=spec, subnet_id="subnet-0abc1234", security_group_ids=())


def test_data_repository_association_links_s3_at_data_once(session):
    fsx = session.client("fsx")
    with Stubber(fsx) as stub:
        filters = [{"Name": "file-system-id", "Values": ["fs-0123456789abcdef0"]}]
        stub.add_response("describe_data_repository_associations", {"Associations": []}, {"Filters": filters})
        stub.add_response(
            "create_data_repository_association",
            {"Association": {"AssociationId": "dra-0123456789abcdef0", "DataRepositoryPath": "s3://corpus/ja/"}},
            {
                "ClientRequestToken": "fmp-1-llm-dra",
                "FileSystemId": "fs-0123456789abcdef0",
                "FileSystemPath": "/data",
                "DataRepositoryPath": "s3://corpus/ja/",
                "BatchImportMetaDataOnCreate": True,
                "S3": {
                    "AutoImportPolicy": {"Events": ["NEW", "CHANGED", "DELETED"]},
                    "AutoExportPolicy": {"Events": ["NEW", "CHANGED", "DELETED"]},
                },
            },
        )
        # The rerun finds the association and creates nothing.
        stub.add_response(
            "describe_data_repository_associations",
            {"Associations": [{"AssociationId": "dra-0123456789abcdef0", "DataRepositoryPath": "s3://corpus/ja/"}]},
            {"Filters": filters},
        )
        args = {"file_system_id": "fs-0123456789abcdef0", "s3_path": "s3://corpus/ja/", "token": "fmp-1-llm"}
        assert ensure_data_repository_association(fsx, **args) == "dra-0123456789abcdef0"
        assert ensure_data_repository_association(fsx, **args) == "dra-0123456789abcdef0"
        stub.assert_no_pending_responses()
