"""The pool timeline's index: allocations by pool and organization, covering what its holder ranking sums and its
chart draws, so neither reads the table's rows of every organization (bench/capacity.py)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    # 0018_identity is this branch's leaf; re-chained after the other engineers' 0018–0020 at merge.
    dependencies = [
        ("tenants", "0018_identity"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="allocation",
            index=models.Index(
                fields=["pool", "organization", "starts_on"],
                include=["ends_on", "instance_count", "status"],
                name="allocation_pool_org",
            ),
        ),
    ]
