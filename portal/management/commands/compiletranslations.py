from pathlib import Path

import polib
from django.apps import apps
from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Compile every .po catalog of the project to .mo with polib (no system gettext needed)."

    def handle(self, *args, **options) -> None:
        roots = [Path(p) for p in settings.LOCALE_PATHS]
        # Our own apps sit directly under BASE_DIR; third-party ones ship compiled catalogs.
        own_apps = [app for app in apps.get_app_configs() if Path(app.path).parent == settings.BASE_DIR]
        roots += [Path(app.path) / "locale" for app in own_apps]
        compiled = 0
        for root in roots:
            for po_path in root.glob("*/LC_MESSAGES/*.po"):
                mo_path = po_path.with_suffix(".mo")
                if mo_path.exists() and mo_path.stat().st_mtime >= po_path.stat().st_mtime:
                    continue
                polib.pofile(str(po_path)).save_as_mofile(str(mo_path))
                compiled += 1
        self.stdout.write(f"Compiled {compiled} translation catalog(s).")
