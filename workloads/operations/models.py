"""One row per Celery queue: its last heartbeat, as the worker that ran it wrote it; and beat's own row."""

from django.db import models
from django.utils.translation import gettext_lazy as _

# Beat's row: written by beat itself every few seconds (workloads.operations.beat), not by a worker.
BEAT_ROW = "beat"


class WorkerHeartbeat(models.Model):
    queue = models.CharField(_("queue"), max_length=64, primary_key=True)
    sent_at = models.DateTimeField(_("sent at"))  # by beat: ran_at - sent_at is how long work waited in the queue
    ran_at = models.DateTimeField(_("ran at"))
    worker = models.CharField(_("worker"), max_length=255, blank=True)

    class Meta:
        verbose_name = _("worker heartbeat")
        verbose_name_plural = _("worker heartbeats")

    def __str__(self) -> str:
        return f"{self.queue}: {self.ran_at:%Y-%m-%d %H:%M:%S}"

    @property
    def waited_seconds(self) -> float:
        return max((self.ran_at - self.sent_at).total_seconds(), 0.0)


class CloudCallTally(models.Model):
    """Calls to one AWS endpoint (account × region × service) within one minute, as the processes that made them
    counted them (portal.cloud.calls; written after each task, never once per call). /healthz?deep=1 names an
    endpoint whose latest call failed."""

    account = models.CharField(_("AWS account"), max_length=12, blank=True)  # blank: the portal's own account
    region = models.CharField(_("region"), max_length=32)
    service = models.CharField(_("service"), max_length=64)
    minute = models.DateTimeField(_("minute"))
    calls = models.PositiveIntegerField(_("calls"), default=0)
    failures = models.PositiveIntegerField(_("failures"), default=0)
    last_failure = models.CharField(_("last failure"), max_length=200, blank=True)
    last_failure_at = models.DateTimeField(_("last failure at"), null=True, blank=True)
    last_success_at = models.DateTimeField(_("last success at"), null=True, blank=True)

    class Meta:
        verbose_name = _("AWS call tally")
        verbose_name_plural = _("AWS call tallies")
        constraints = [
            models.UniqueConstraint(fields=["account", "region", "service", "minute"], name="unique_cloud_call_minute")
        ]
        indexes = [models.Index(fields=["minute"])]

    def __str__(self) -> str:
        return (
            f"{self.service} {self.region} {self.account or 'portal'} {self.minute:%H:%M}: {self.failures}/{self.calls}"
        )
