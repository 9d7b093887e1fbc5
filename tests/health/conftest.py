# The fixture lives in its own module so tests outside tests/health (tests/cloud) can import it too.
from tests.health.prometheus_server import prometheus  # noqa: F401
