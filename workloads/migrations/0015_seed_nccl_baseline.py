"""The default NCCL baseline: p5.48xlarge, 2 nodes, large messages, from the real 2-node P5 sample in
../shared/samples (aws-samples/awsome-distributed-training): peak bus bandwidth 487 GB/s at 16 GiB."""

from django.db import migrations

SOURCE = (
    "aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/README.md @ 27b7d49: all_reduce_perf "
    "over Slurm on 2x p5.48xlarge, bus bandwidth peaking at 487.26 GB/s at 16 GiB"
)


def seed(apps, schema_editor):
    InstanceType = apps.get_model("tenants", "InstanceType")
    NcclBaseline = apps.get_model("workloads", "NcclBaseline")
    p5 = InstanceType.objects.filter(api_name="p5.48xlarge").first()
    if p5 is not None:
        NcclBaseline.objects.get_or_create(
            instance_type=p5, nodes=2, defaults={"size_bytes": 16 * 2**30, "busbw_gbps": 487.0, "source": SOURCE}
        )


def unseed(apps, schema_editor):
    apps.get_model("workloads", "NcclBaseline").objects.filter(instance_type__api_name="p5.48xlarge", nodes=2).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("workloads", "0014_jobs_health_validation"),
        ("tenants", "0002_seed_catalog"),
    ]

    operations = [migrations.RunPython(seed, unseed)]
