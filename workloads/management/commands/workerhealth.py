"""docker-compose's worker healthcheck: exit 1 unless a worker ran the queue's heartbeat lately."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from workloads.operations.health import queue_states


class Command(BaseCommand):
    help = "Exit 0 when a worker took the queue's heartbeat in the last two minutes, 1 otherwise."

    def add_arguments(self, parser):
        parser.add_argument("--queue", default="celery", choices=settings.WORKER_QUEUES)

    def handle(self, *args, queue: str, **options):
        state = queue_states()[queue]
        if state["state"] != "ok":
            raise CommandError(f"queue {queue}: {state}")
        self.stdout.write(f"queue {queue}: {state}")
