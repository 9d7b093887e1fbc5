"""The identity providers' metadata: fetched at the first sign-in (`make run` needs no IdP), its signature checked
against `metadata_cert`, parsed by pysaml2 and kept `metadata_hours`. A federation's metadata (GakuNin's: hundreds
of entities) takes a while to parse, so each process keeps the parsed copy; when a refresh fails, the copy it has
goes on serving until the metadata's own validUntil, and the portal only says the IdP is unreachable when it has none.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import requests
from django.conf import settings
from saml2.attribute_converter import ac_factory
from saml2.config import SPConfig
from saml2.mdstore import MetaDataLoader, MetadataStore
from saml2.sigver import security_context

from tenants.sso.providers import Provider

logger = logging.getLogger("portal.sso")

DEFAULT_HOURS = 6  # GakuNin and eduGAIN publish daily; an IdP's own metadata changes with its keys
MAX_BYTES = 200 * 2**20  # eduGAIN's aggregate is about 80 MB; anything much larger is not metadata


class MetadataUnavailable(Exception):
    """The IdP's metadata could not be had: unreachable, an error status, or nothing usable in it."""


class MetadataRefused(MetadataUnavailable):
    """The metadata came, but is not to be trusted (its signature, or validUntil passed): the program team's to mend."""


def xmlsec_binary() -> str | None:
    """The xmlsec1 program pysaml2 signs, verifies and decrypts with (Debian's `xmlsec1` package)."""
    return shutil.which("xmlsec1")


@dataclass
class _Cached:
    fresh_until: float  # time.monotonic(): fetch again after this
    store: MetadataStore


_cache: dict[str, _Cached] = {}
_locks: dict[str, threading.Lock] = {}  # one per metadata source: a slow federation holds up no other provider


def store(provider: Provider) -> MetadataStore:
    """The provider's IdP metadata, parsed (pysaml2's MetadataStore): the cached copy while fresh."""
    key = _cache_key(provider)
    cached = _cache.get(key)
    if cached and cached.fresh_until > time.monotonic():
        return cached.store
    with _locks.setdefault(key, threading.Lock()):  # one fetch per source and process, not one per person arriving
        cached = _cache.get(key)
        if cached and cached.fresh_until > time.monotonic():
            return cached.store
        try:
            found = _load(provider)
        except MetadataUnavailable as error:
            if cached is not None and not isinstance(error, MetadataRefused) and _still_valid(cached.store):
                logger.warning("SAML metadata of %s: %s; the copy fetched before still serves", provider.key, error)
                cached.fresh_until = time.monotonic() + 300  # try again in five minutes
                return cached.store
            raise
        hours = float(provider.options.get("metadata_hours", DEFAULT_HOURS))
        _cache[key] = _Cached(time.monotonic() + hours * 3600, found)
        return found


def forget() -> None:
    """Fetch every metadata again at the next sign-in (tests; a federation's key roll-over)."""
    _cache.clear()


def identity_providers(provider: Provider, language: str = "en") -> list[tuple[str, str]]:
    """(entity id, display name) of each IdP the metadata describes, by name: mdui:DisplayName in `language`,
    else in English, else the organization's name, else the entity id."""
    found = store(provider)
    names = []
    for entity_id in found.identity_providers():
        name = next(iter(found.mdui_uiinfo_display_name(entity_id, language)), None)
        name = name or next(iter(found.mdui_uiinfo_display_name(entity_id, "en")), None)
        names.append((entity_id, name or found.name(entity_id, language) or entity_id))
    return sorted(names, key=lambda pair: pair[1].casefold())


def _cache_key(provider: Provider) -> str:
    options = provider.options
    source = options.get("metadata_url") or options.get("metadata_file")
    return f"{provider.key} {source} {options.get('metadata_cert')}"


def _still_valid(found: MetadataStore) -> bool:
    try:
        return all(not md.to_old for md in found.metadata.values())
    except AttributeError:
        return True


def _content(provider: Provider) -> bytes:
    url, path = provider.options.get("metadata_url"), provider.options.get("metadata_file")
    if path:
        try:
            return Path(path).read_bytes()
        except OSError as error:
            raise MetadataUnavailable(f"cannot read {path}: {error}") from error
    if not url:
        raise MetadataUnavailable("neither metadata_url nor metadata_file is set")
    try:
        with requests.get(url, timeout=settings.OIDC_TIMEOUT, stream=True) as response:
            response.raise_for_status()
            content = response.raw.read(MAX_BYTES + 1, decode_content=True)
    except requests.RequestException as error:
        raise MetadataUnavailable(f"{url}: {error}") from error
    if len(content) > MAX_BYTES:
        raise MetadataUnavailable(f"{url}: over {MAX_BYTES} bytes")
    return content


def _load(provider: Provider) -> MetadataStore:
    content = _content(provider)
    cert = provider.options.get("metadata_cert") or None
    config = SPConfig().load({"entityid": "urn:fmportal:metadata-reader", "xmlsec_binary": xmlsec_binary()})
    attrc = ac_factory()
    source = provider.options.get("metadata_url") or provider.options.get("metadata_file")
    loaded = MetaDataLoader(attrc, lambda: content, cert=cert, security=security_context(config), filename=source)
    try:
        loaded.load()
    except Exception as error:  # pysaml2 raises its own, xmlsec1's, the XML parser's: any is metadata not to use
        raise MetadataRefused(f"metadata not accepted: {error!r}") from error
    if cert and not loaded.signed():
        # pysaml2 lets unsigned metadata through even when given a certificate: a signature is what it is for.
        raise MetadataRefused(f"metadata_cert is set but the metadata is not signed ({provider.key})")
    if not list(loaded.keys()):
        raise MetadataRefused("the metadata describes no SAML 2.0 entity")
    found = MetadataStore(attrc, config, check_validity=True, http_client_timeout=settings.OIDC_TIMEOUT)
    found.metadata[_cache_key(provider)] = loaded
    logger.info("SAML metadata of %s: %d entities", provider.key, len(list(loaded.keys())))
    return found
