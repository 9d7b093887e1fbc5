"""Rebuild the pool ledger from the allocations, reporting where it differed (it should never)."""

from django.core.management.base import BaseCommand

from tenants.capacity import ledger


class Command(BaseCommand):
    help = (
        "Compare the pool ledger with the allocations, report any difference, and rebuild it (--check: only compare)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--check", action="store_true", help="Only compare; exit 1 if the ledger differs.")

    def handle(self, *args, check: bool = False, **options) -> None:
        found = ledger.differences()
        for (pool_id, day), (have, want) in sorted(found.items())[:50]:
            self.stdout.write(f"pool {pool_id} on {day}: ledger {have}, allocations {want}")
        if len(found) > 50:
            self.stdout.write(f"… and {len(found) - 50} more days")
        self.stdout.write(f"{len(found)} day(s) differ." if found else "The ledger matches the allocations.")
        if check:
            if found:
                raise SystemExit(1)
            return
        self.stdout.write(f"Rebuilt: {ledger.rebuild()} ledger rows.")
