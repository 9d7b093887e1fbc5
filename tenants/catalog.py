"""Loads the instance-type catalog from tenants/data/instance_types.json."""

import json
from datetime import date
from decimal import Decimal
from pathlib import Path

CATALOG_FILE = Path(__file__).parent / "data" / "instance_types.json"
TYPE_FIELDS = (
    "accelerator", "accelerators_per_instance", "ranks_per_instance", "accelerator_memory_gib", "peak_bf16_tflops",
    "vcpus", "memory_gib", "efa_gbps",
)  # fmt: skip


def load_catalog(*, instance_type_model, price_model, path: Path = CATALOG_FILE) -> int:
    """Create or update every catalog entry; takes the models so a data migration can pass its own."""
    entries = json.loads(path.read_text())["instance_types"]
    # A data migration passes the model as it was then: fields added later are left to their own migration.
    fields = [field for field in TYPE_FIELDS if any(f.name == field for f in instance_type_model._meta.fields)]
    for entry in entries:
        instance_type, _ = instance_type_model.objects.update_or_create(
            api_name=entry["api_name"], defaults={field: entry[field] for field in fields}
        )
        for price in entry["prices"]:
            price_model.objects.update_or_create(
                instance_type=instance_type,
                region=price["region"],
                defaults={
                    "usd_per_hour": Decimal(price["usd_per_hour"]),
                    "price_date": date.fromisoformat(price["price_date"]),
                    "source": price.get("source", ""),
                },
            )
    return len(entries)
