"""Reading settings from the environment: each name read is noted (ENV_NAMES), so tests can check that
docker-compose.yml passes every one; values are parsed strictly (a typo must not silently mean the default)."""

import os
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

# Names of every environment variable read here; tests check docker-compose.yml against it.
ENV_NAMES: set[str] = set()


def env(name: str, default: str = "") -> str:
    ENV_NAMES.add(name)
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    # Strict, like healthchecks' envbool: a typo must not silently mean False.
    value = env(name, str(default))
    if value not in ("True", "False"):
        raise ImproperlyConfigured(f"{name} must be True or False, not {value!r}.")
    return value == "True"


def env_int(name: str, default: int) -> int:
    value = env(name, str(default))
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, not {value!r}.") from None


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in env(name, default).split(",") if item.strip()]


def origins(*urls: str) -> list[str]:
    """scheme://host[:port] of each URL given (blank ones skipped): what a CSP source list names."""
    found = []
    for url in filter(None, urls):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ImproperlyConfigured(f"{url!r} is not an http(s) URL.")
        found.append(f"{parts.scheme}://{parts.netloc}")
    return found
