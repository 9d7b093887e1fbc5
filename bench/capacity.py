"""Capacity pages and API at 10 / 1,000 / 10,000 rows: wall time and SQL queries per request.

2,000 organizations; at each size, that many submitted requests and that many allocations spread
over three pools and the six-month program. Queries per page must not grow with the rows.
"""

import random
from datetime import date, timedelta

from bench._django import median_get, setup

SIZES = (10, 1_000, 10_000)
ORGS = 2_000
REPEAT = 3


def build(size: int, rng: random.Random, orgs, pools, user) -> None:
    from tenants.models import Allocation, CapacityRequest

    Allocation.objects.all().delete()
    CapacityRequest.objects.all().delete()
    start = pools[0].starts_on
    requests, allocations = [], []
    for i in range(size):
        pool = pools[i % len(pools)]
        first = start + timedelta(days=rng.randrange(150))
        last = first + timedelta(days=rng.randrange(7, 30))
        org = orgs[rng.randrange(len(orgs))]
        requests.append(
            CapacityRequest(
                organization=org, pool=pool, instance_count=rng.randrange(1, 9), starts_on=first, ends_on=last,
                justification="bench", parameter_count=(7 * 10**9 if i % 2 else None),
                status=CapacityRequest.Status.SUBMITTED, created_by=user,
            )
        )  # fmt: skip
        allocations.append(
            Allocation(organization=org, pool=pool, instance_count=rng.randrange(1, 9), starts_on=first, ends_on=last)
        )
    CapacityRequest.objects.bulk_create(requests, batch_size=2_000)
    Allocation.objects.bulk_create(allocations, batch_size=2_000)


def main() -> None:
    setup()
    from django.contrib.auth import get_user_model
    from django.test import Client
    from rest_framework.test import APIClient

    from tenants.models import CapacityPool, InstanceType, Organization, Program, Region, StaffRole

    rng = random.Random(42)
    program = Program.objects.create(name="Bench", slug="bench", starts_on=date(2030, 1, 1), ends_on=date(2030, 7, 1))
    types = {t.api_name: t for t in InstanceType.objects.all()}
    pools = [
        CapacityPool.objects.create(
            program=program,
            instance_type=types[name],
            region=region,
            total_instances=100_000,
            starts_on=program.starts_on,
            ends_on=program.ends_on,
        )  # fmt: skip
        for name, region in (
            ("p5.48xlarge", Region.US_EAST_1),
            ("p5.48xlarge", Region.AP_NORTHEAST_1),
            ("trn1.32xlarge", Region.US_EAST_1),
        )  # fmt: skip
    ]
    Organization.objects.bulk_create(Organization(name=f"Org {i}", slug=f"org-{i}") for i in range(ORGS))
    orgs = list(Organization.objects.all())
    manager = get_user_model().objects.create_user("bench-manager", password="x")
    StaffRole.objects.create(user=manager, role=StaffRole.Role.PROGRAM_MANAGER)
    pages = Client()
    pages.force_login(manager)
    api = APIClient()
    api.force_authenticate(manager)
    targets = [
        ("page  review queue", pages, "/program/capacity/review/"),
        ("page  allocations", pages, "/program/capacity/allocations/"),
        ("page  pool timeline", pages, f"/program/capacity/pools/{pools[0].pk}/"),
        ("api   capacity-requests", api, "/api/v1/capacity-requests/"),
        ("api   allocations", api, "/api/v1/allocations/"),
        ("api   pools ?start&end", api, "/api/v1/pools/?start=2030-02-01&end=2030-04-30"),
    ]
    print(f"{ORGS:,} organizations; per size: that many submitted requests and allocations over 3 pools")
    print(f"{'endpoint':28} " + " ".join(f"{f'{n:,} rows':>22}" for n in SIZES))
    results = {name: [] for name, _, _ in targets}
    for size in SIZES:
        build(size, rng, orgs, pools, manager)
        for name, client, url in targets:
            client.get(url)  # warm caches (templates, catalog)
            run = median_get(client, url, REPEAT)
            results[name].append((run["ms"], run["queries"]))
    for name, figures in results.items():
        print(f"{name:28} " + " ".join(f"{ms:>9.1f} ms {q:>3} queries" for ms, q in figures))
    grew = [name for name, figures in results.items() if len({q for _, q in figures}) > 1]
    print("queries per request constant across sizes:", "yes" if not grew else f"NO: {', '.join(grew)}")
