"""Ranks per instance: what a training layout counts (a GPU, or a NeuronCore on Trainium, two per chip)."""

from django.db import migrations, models


def from_catalog(apps, schema_editor):
    """Only the new figure, from the catalog file: prices and figures edited in admin stay as they are."""
    import json

    from tenants.catalog import CATALOG_FILE

    InstanceType = apps.get_model("tenants", "InstanceType")
    for entry in json.loads(CATALOG_FILE.read_text())["instance_types"]:
        InstanceType.objects.filter(api_name=entry["api_name"]).update(ranks_per_instance=entry["ranks_per_instance"])
    # Types added in admin, not in the catalog file: one rank per accelerator, as on every GPU.
    InstanceType.objects.filter(ranks_per_instance=0).update(ranks_per_instance=models.F("accelerators_per_instance"))


class Migration(migrations.Migration):
    dependencies = [("tenants", "0012_organization_language")]

    operations = [
        migrations.AddField(
            model_name="instancetype",
            name="ranks_per_instance",
            field=models.PositiveSmallIntegerField(
                default=0,
                help_text="Processes a training layout runs per instance: one per GPU; one per NeuronCore on Trainium.",
                verbose_name="ranks per instance",
            ),
            preserve_default=False,
        ),
        migrations.RunPython(from_catalog, migrations.RunPython.noop),
    ]
