from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"

    def ready(self) -> None:
        from portal.celery import ensure_broker_folders

        ensure_broker_folders()
