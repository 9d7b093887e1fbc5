import os
import pkgutil

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")


def task_packages() -> list[str]:
    """Every installed app and each of its sub-packages, so a `tasks.py` anywhere in them is found
    (workloads/clusters/tasks.py, tenants/capacity/tasks.py…) with nothing to list by hand."""
    from django.apps import apps

    packages = []
    for config in apps.get_app_configs():
        packages.append(config.name)
        packages += [f"{config.name}.{sub.name}" for sub in pkgutil.iter_modules([config.path]) if sub.ispkg]
    return packages


app.autodiscover_tasks(task_packages)


def ensure_broker_folders() -> None:
    """The filesystem broker needs its folders before the first publish or consume."""
    from django.conf import settings

    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if folder := settings.CELERY_BROKER_TRANSPORT_OPTIONS.get(key):
            os.makedirs(folder, exist_ok=True)
