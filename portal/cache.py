"""The shared cache on Redis, as a cache should be: when Redis does not answer, a read is a miss and a write is
skipped — never an error in the request that asked.

Django's RedisCache raises redis' ConnectionError or TimeoutError to its caller, so with Redis stopped every API
write (its per-minute budget is counted in the cache: portal.throttling) and every usage page (its charts are cached)
was a 500, and so was deep health (its AWS probes are cached). The broker going down must cost the cache, not the
portal: here each call gives up after a short timeout and answers as if the key were not there (the budgets then
count nothing until Redis is back — fair use is suspended rather than every write refused). Each failure is logged,
at most once a minute per process.
"""

from __future__ import annotations

import functools
import logging
import time

from django.core.cache.backends.redis import RedisCache
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger(__name__)
UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)
# How long one cache call may wait for Redis: a cache that takes longer is no faster than the work it saves.
SOCKET_TIMEOUT_SECONDS = 1.0
_LOG_EVERY_SECONDS = 60
_last_logged = 0.0


def _miss(default_of):
    """Wrap a cache method: on an unreachable Redis, return `default_of(*args, **kwargs)` instead of raising."""

    def decorate(method):
        @functools.wraps(method)
        def wrapper(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except UNREACHABLE as error:
                _note(method.__name__, error)
                return default_of(*args, **kwargs)

        return wrapper

    return decorate


def _note(call: str, error: BaseException) -> None:
    global _last_logged
    if time.monotonic() - _last_logged >= _LOG_EVERY_SECONDS:
        _last_logged = time.monotonic()
        log.warning("cache: Redis did not answer %s (%s): a miss, and nothing kept", call, error)


class ForgivingRedisCache(RedisCache):
    def __init__(self, server, params):
        options = params.setdefault("OPTIONS", {})
        options.setdefault("socket_connect_timeout", SOCKET_TIMEOUT_SECONDS)
        options.setdefault("socket_timeout", SOCKET_TIMEOUT_SECONDS)
        super().__init__(server, params)

    @_miss(lambda key, default=None, version=None: default)
    def get(self, key, default=None, version=None):
        return super().get(key, default, version)

    @_miss(lambda *args, **kwargs: None)
    def set(self, key, value, timeout=None, version=None):
        return super().set(key, value, timeout, version)

    @_miss(lambda *args, **kwargs: False)
    def add(self, key, value, timeout=None, version=None):
        return super().add(key, value, timeout, version)

    @_miss(lambda *args, **kwargs: False)
    def touch(self, key, timeout=None, version=None):
        return super().touch(key, timeout, version)

    @_miss(lambda *args, **kwargs: False)
    def delete(self, key, version=None):
        return super().delete(key, version)

    @_miss(lambda *args, **kwargs: {})
    def get_many(self, keys, version=None):
        return super().get_many(keys, version)

    @_miss(lambda *args, **kwargs: False)
    def has_key(self, key, version=None):
        return super().has_key(key, version)

    @_miss(lambda key, delta=1, version=None: delta)  # a count that starts again: this request counts as the first
    def incr(self, key, delta=1, version=None):
        return super().incr(key, delta, version)

    @_miss(lambda *args, **kwargs: [])
    def set_many(self, data, timeout=None, version=None):
        return super().set_many(data, timeout, version)

    @_miss(lambda *args, **kwargs: None)
    def delete_many(self, keys, version=None):
        return super().delete_many(keys, version)
