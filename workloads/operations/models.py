"""One row per Celery queue: its last heartbeat, as the worker that ran it wrote it."""

from django.db import models
from django.utils.translation import gettext_lazy as _


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
