import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def ensure_broker_folders() -> None:
    """The filesystem broker needs its folders before the first publish or consume."""
    from django.conf import settings

    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if folder := settings.CELERY_BROKER_TRANSPORT_OPTIONS.get(key):
            os.makedirs(folder, exist_ok=True)
