"""The shared cache on Redis (portal/cache.py): a cache, not a dependency. With Redis refusing connections every
call is a miss and every write is skipped, and the requests that use the cache — an API write (its budget), deep
health (its probes) — answer as they would without it. Seen in `make chaos`: with Redis stopped, 32 writes were 500s
and deep health never said "broker:"."""

import pytest
from django.core.cache import cache
from django.test import override_settings

from tests.environment import unavailable
from tests.servers import free_port
from tests.test_throttling import token_client


@pytest.fixture
def redis_down():
    location = f"redis://127.0.0.1:{free_port()}/0"
    with override_settings(CACHES={"default": {"BACKEND": "portal.cache.ForgivingRedisCache", "LOCATION": location}}):
        yield


@pytest.mark.usefixtures("redis_down")
def test_with_redis_down_every_read_is_a_miss_and_every_write_is_skipped():
    assert cache.get("key") is None
    assert cache.get("key", "default") == "default"
    assert cache.set("key", 1) is None
    assert cache.add("key", 1) is False
    assert cache.incr("key") == 1  # a budget counts this request as the first of its minute
    assert cache.get_many(["a", "b"]) == {}
    assert cache.has_key("key") is False
    cache.delete("key")


@pytest.mark.django_db
@pytest.mark.usefixtures("redis_down")
def test_with_redis_down_api_writes_and_deep_health_answer_as_usual(member, client, settings):
    from portal.cloud import calls
    from tenants.tokens.services import create_token
    from workloads.operations import cloud_calls

    settings.AWS_ENDPOINT_URL = f"http://127.0.0.1:{free_port()}"
    calls.record(account="111122223333", region="us-east-1", service="sts")  # called lately: deep health probes it
    cloud_calls.flush()

    _token, key = create_token(user=member, name="script", expires_in_days=30, via="page")
    writes = [token_client(key).post("/api/v1/workloads/", {}, format="json").status_code for _ in range(3)]
    assert writes == [400, 400, 400]  # the body's errors, not a 500
    deep = client.get("/healthz?deep=1")
    assert deep["Content-Type"] == "application/json"
    assert any(problem.startswith("aws: sts us-east-1: not answering") for problem in deep.json()["problems"])


def test_on_a_redis_that_answers_it_is_redis(settings):
    """The same backend on the machine's Redis (CI's; skipped locally without one) keeps and counts."""
    from redis import Redis
    from redis.exceptions import ConnectionError as RedisConnectionError

    try:
        Redis(host="127.0.0.1", port=6379, socket_connect_timeout=1).ping()
    except RedisConnectionError:
        unavailable("no Redis on 127.0.0.1:6379")
    location = "redis://127.0.0.1:6379/12"
    backend = {"BACKEND": "portal.cache.ForgivingRedisCache", "LOCATION": location, "KEY_PREFIX": "portal-test"}
    with override_settings(CACHES={"default": backend}):
        cache.delete("budget")
        assert cache.add("budget", 0, timeout=30) is True
        assert [cache.incr("budget") for _ in range(3)] == [1, 2, 3]
        cache.set("charts", "<svg/>", 30)
        assert cache.get("charts") == "<svg/>"
        cache.delete_many(["budget", "charts"])
