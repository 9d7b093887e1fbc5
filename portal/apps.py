from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"

    def ready(self) -> None:
        from django.conf import settings

        from portal.celery import ensure_broker_folders

        ensure_broker_folders()
        # WhiteNoise warns on every start until collectstatic has created it.
        settings.STATIC_ROOT.mkdir(parents=True, exist_ok=True)
