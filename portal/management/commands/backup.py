"""`manage.py backup PATH`: a backup of the database (PostgreSQL: pg_dump's custom format; SQLite: an online copy)
and its manifest, PATH.json (portal/backups.py; docs/operations/backups.md)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from portal.backups import BackupError, backup, database_settings, manifest_path


class Command(BaseCommand):
    help = "Back up the database to PATH (and its manifest to PATH.json) while the portal runs."

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", type=Path, help="The backup file to write, e.g. /backups/portal-2026-11-28.dump")
        parser.add_argument("--database", default="default", help="Which of DATABASES (default: default).")

    def handle(self, *args, path: Path, database: str, **options) -> None:
        try:
            manifest = backup(path=path, settings_dict=database_settings(database))
        except BackupError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            f"Backed up {manifest.engine} database {manifest.database} to {path}: {len(manifest.tables)} tables, "
            f"{manifest.rows} rows, {len(manifest.migrations)} migrations applied (manifest: {manifest_path(path)})."
        )
