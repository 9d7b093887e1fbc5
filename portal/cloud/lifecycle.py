"""HyperPod lifecycle scripts: each Slurm cluster gets its own copy of the org's scripts plus the
provisioning_parameters.json they read (controller and worker groups, the FSx for Lustre to mount).

The org keeps its scripts at one S3 prefix; writing the parameters there would make every cluster of
the org share one file, so each cluster's scripts are staged under <prefix>clusters/<cloud name>/.
Staging is idempotent: a rerun copies and writes the same keys again.
"""

from __future__ import annotations

import json

from botocore.exceptions import BotoCoreError, ClientError

from portal.cloud.errors import PermanentCloudError, classify, error_code
from portal.cloud.session import CloudSession
from portal.cloud.types import ClusterSpec, FileSystemInfo, GroupRole, ml_type

PARAMETERS_FILE = "provisioning_parameters.json"
STAGING_DIR = "clusters/"


def split_s3_uri(uri: str) -> tuple[str, str]:
    """s3://bucket/some/prefix → ("bucket", "some/prefix/"); the prefix always ends with / (or is empty)."""
    if not uri.startswith("s3://"):
        raise PermanentCloudError(f"Not an S3 URI: {uri}", code="BadS3Uri")
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    return bucket, (prefix.rstrip("/") + "/") if prefix.strip("/") else ""


def provisioning_parameters(spec: ClusterSpec, storage: FileSystemInfo | None) -> dict:
    """What the Slurm lifecycle scripts (awsome-distributed-training's base config) expect."""
    parameters: dict = {"version": "1.0.0", "workload_manager": "slurm"}
    for group in spec.groups:
        if group.role == GroupRole.CONTROLLER:
            parameters["controller_group"] = group.name
        elif group.role == GroupRole.LOGIN:
            parameters["login_group"] = group.name
    parameters["worker_groups"] = [
        {"instance_group_name": g.name, "partition_name": ml_type(g.instance_type)}
        for g in spec.groups
        if g.role == GroupRole.WORKER
    ]
    if storage is not None:
        parameters["fsx_dns_name"] = storage.dns_name
        parameters["fsx_mountname"] = storage.mount_name
    return parameters


def stage_lifecycle(session: CloudSession, spec: ClusterSpec, storage: FileSystemInfo | None) -> str:
    """Copy the org's scripts to the cluster's own prefix, add its parameters; return that prefix's URI."""
    bucket, prefix = split_s3_uri(spec.lifecycle_s3_uri)
    staged = f"{prefix}{STAGING_DIR}{spec.name}/"
    s3 = session.client("s3")
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                key = item["Key"]
                if key.startswith(f"{prefix}{STAGING_DIR}") or key.endswith("/"):
                    continue  # other clusters' staged copies, folder markers
                s3.copy_object(
                    Bucket=bucket, Key=staged + key[len(prefix) :], CopySource={"Bucket": bucket, "Key": key}
                )
        s3.put_object(
            Bucket=bucket,
            Key=staged + PARAMETERS_FILE,
            Body=json.dumps(provisioning_parameters(spec, storage), indent=2).encode(),
            ContentType="application/json",
        )
    except ClientError as error:
        if error_code(error) == "NoSuchBucket":
            raise PermanentCloudError(
                f"The lifecycle scripts bucket {bucket} does not exist in this account.", code="NoSuchBucket"
            ) from error
        raise classify(error) from error
    except BotoCoreError as error:
        raise classify(error) from error
    return f"s3://{bucket}/{staged}"


def seed_lifecycle_scripts(session: CloudSession, uri: str, files: dict[str, str]) -> None:
    """Put scripts at an org's lifecycle prefix, creating the bucket if needed (demo and tests, in the
    emulator: a real org uploads its own)."""
    bucket, prefix = split_s3_uri(uri)
    s3 = session.client("s3")
    try:
        try:
            s3.head_bucket(Bucket=bucket)
        except ClientError:
            params = {"Bucket": bucket}
            if session.region != "us-east-1":
                params["CreateBucketConfiguration"] = {"LocationConstraint": session.region}
            s3.create_bucket(**params)
        for name, body in files.items():
            s3.put_object(Bucket=bucket, Key=prefix + name, Body=body.encode())
    except (ClientError, BotoCoreError) as error:
        raise classify(error) from error


SAMPLE_ON_CREATE = """#!/bin/bash
# Sample HyperPod lifecycle script (demo): reads provisioning_parameters.json next to it.
set -euo pipefail
echo "node $(hostname) joining $(jq -r .controller_group provisioning_parameters.json)"
"""
