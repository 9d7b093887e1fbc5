"""`manage.py restore PATH`: a backup made by `manage.py backup` restored into the configured database, which must
be empty unless --replace; every table's rows are then counted against the backup's manifest (portal/backups.py;
docs/operations/backups.md)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from portal.backups import BackupError, database_settings, restore, unknown_migrations


class Command(BaseCommand):
    help = "Restore the backup at PATH into the database (empty, unless --replace) and check its row counts."

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", type=Path, help="A backup file written by manage.py backup.")
        parser.add_argument("--database", default="default", help="Which of DATABASES (default: default).")
        parser.add_argument(
            "--replace",
            action="store_true",
            help="Drop what the database holds and restore over it (stop web, workers and beat first).",
        )

    def handle(self, *args, path: Path, database: str, replace: bool, **options) -> None:
        settings_dict = database_settings(database)
        try:
            manifest = restore(path=path, settings_dict=settings_dict, replace=replace)
        except BackupError as error:
            raise CommandError(str(error)) from None
        if manifest is None:
            self.stdout.write(
                self.style.WARNING(f"Restored {path}; no manifest beside it ({path}.json), so no row counts checked.")
            )
            return
        self.stdout.write(
            f"Restored {path} into {settings_dict['NAME']}: {len(manifest.tables)} tables, {manifest.rows} rows, "
            f"every table's count as in the backup of {manifest.created_at}."
        )
        if newer := unknown_migrations(manifest):
            self.stdout.write(
                self.style.WARNING(
                    f"The backup was taken by a newer version of the portal ({len(newer)} migrations this one does "
                    f"not have, e.g. {newer[0]}): run that version against it, not this one."
                )
            )
