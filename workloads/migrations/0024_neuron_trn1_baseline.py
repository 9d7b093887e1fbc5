"""The default Trainium interconnect baseline: trn1.32xlarge, 2 nodes, all-reduce at 1 GiB, from the NCCOM-TEST user
guide's 2-instance example (tests/samples/nccom_test_all_reduce_trn1_2node.txt): 47.09 GiB/s, 50.56 GB/s."""

from django.db import migrations

SOURCE = (
    "aws-neuron/aws-neuron-sdk tools/neuron-sys-tools/nccom-test.rst @ f25691d: nccom-test all-reduce, 64 ranks on "
    "2 trn1 instances, bus bandwidth peaking at 47.09 GiB/s (50.56 GB/s) at 1 GiB"
)


def seed(apps, schema_editor):
    InstanceType = apps.get_model("tenants", "InstanceType")
    NcclBaseline = apps.get_model("workloads", "NcclBaseline")
    trn1 = InstanceType.objects.filter(api_name="trn1.32xlarge").first()
    if trn1 is not None:
        NcclBaseline.objects.get_or_create(
            instance_type=trn1, nodes=2, collective="all_reduce", defaults={"size_bytes": 2**30, "busbw_gbps": 50.56, "source": SOURCE}
        )


def unseed(apps, schema_editor):
    apps.get_model("workloads", "NcclBaseline").objects.filter(
        instance_type__api_name="trn1.32xlarge", nodes=2, collective="all_reduce"
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("workloads", "0023_neuron_health"),
        ("tenants", "0002_seed_catalog"),
    ]

    operations = [migrations.RunPython(seed, unseed)]
