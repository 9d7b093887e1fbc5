from django.db import migrations


def seed_catalog(apps, schema_editor):
    # The catalog is reference data every environment needs, production included (demo data is not).
    from tenants.catalog import load_catalog

    load_catalog(instance_type_model=apps.get_model("tenants", "InstanceType"),
                 price_model=apps.get_model("tenants", "InstancePrice"))


class Migration(migrations.Migration):
    dependencies = [("tenants", "0001_initial")]
    operations = [migrations.RunPython(seed_catalog, migrations.RunPython.noop)]
