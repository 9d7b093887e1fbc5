"""gunicorn's hooks for the portal's web process (docker-compose's `web` and the image's CMD pass `--config` this file):
what keeps /metrics right across gunicorn's workers (prometheus_client's multiprocess mode, portal.metrics.registry).
The bind address, the number of workers and the access log stay on the command line, where compose shows them."""


def on_starting(server) -> None:
    """In the master, before any worker exists: the files an earlier run of this container left go."""
    from portal.metrics.registry import clear_own_files

    clear_own_files()


def child_exit(server, worker) -> None:
    """A worker exited (restarted after a timeout, or at max-requests): its live gauges go; its counters stay."""
    from portal.metrics.registry import process_exited

    process_exited(worker.pid)
