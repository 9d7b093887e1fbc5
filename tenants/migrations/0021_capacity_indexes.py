"""The pool timeline's index: allocations by pool and organization, covering what its holder ranking sums and its
chart draws, so neither reads the table's rows of every organization (bench/capacity.py)."""

from django.db import migrations, models

from portal.migration_ops import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False  # the index is built concurrently on PostgreSQL (portal/migration_ops.py)

    dependencies = [
        ("tenants", "0020_service_accounts"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="allocation",
            index=models.Index(
                fields=["pool", "organization", "starts_on"],
                include=["ends_on", "instance_count", "status"],
                name="allocation_pool_org",
            ),
        ),
    ]
