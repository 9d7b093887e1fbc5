import logging
import os
import pkgutil

from celery import Celery
from celery.signals import task_postrun, task_prerun

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

# Tasks counted and timed by outcome in every worker (/metrics); imported for its signal handlers.
from portal.metrics import celery as task_metrics  # noqa: E402, F401


def ensure_broker_folders() -> None:
    """The filesystem broker needs its folders before the first publish or consume."""
    from django.conf import settings

    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if folder := settings.CELERY_BROKER_TRANSPORT_OPTIONS.get(key):
            os.makedirs(folder, exist_ok=True)


# Each task's cloud calls end before its soft time limit (portal.cloud.calls): a call that could not finish in the
# time left is not started, so the task records the failure itself rather than being stopped in the middle of it.
_deadline_tokens: dict[str, object] = {}


@task_prerun.connect(dispatch_uid="cloud-call-deadline")
def _start_cloud_deadline(task_id=None, task=None, **kwargs) -> None:
    from portal.cloud import calls

    soft_limit = (task.request.timelimit or (None, None))[1] or task.soft_time_limit or app.conf.task_soft_time_limit
    _deadline_tokens[task_id] = calls.begin_task(soft_time_limit=soft_limit)


@task_postrun.connect(dispatch_uid="cloud-call-deadline")
def _end_cloud_deadline(task_id=None, **kwargs) -> None:
    from django.db import DatabaseError

    from portal.cloud import calls
    from workloads.operations import cloud_calls

    if (token := _deadline_tokens.pop(task_id, None)) is not None:
        calls.end_task(token)
    # The task's AWS calls, counted per endpoint, written down for /healthz?deep=1: a few rows per task at most.
    try:
        cloud_calls.flush()
    except DatabaseError:  # the database is away: these counts are lost, the next task's are written
        logging.getLogger(__name__).warning("could not write the AWS call tallies", exc_info=True)
