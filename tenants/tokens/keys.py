"""Secret keys stored hashed, for API tokens and whatever else authenticates with a bearer secret.

A key is `<kind>_<43 random URL-safe characters>` (256 bits). The database keeps its SHA-256 digest and the
first characters as a visible prefix (to find it, and for people to tell their keys apart); the key itself is
shown once, at creation, and never stored. A plain fast hash is right here, unlike for passwords: the key is
random, so there is nothing to guess, and no salt is needed. No HMAC with SECRET_KEY either: rotating that
key would then void every token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Self

from django.db import models
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

SECRET_BYTES = 32
PREFIX_SECRET_CHARS = 8  # of the random part shown beside the kind: 48 bits, so prefixes rarely collide


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class NewKey:
    key: str  # give it to the user once; never store it
    prefix: str
    digest: str


def new_key(kind: str) -> NewKey:
    key = f"{kind}_{secrets.token_urlsafe(SECRET_BYTES)}"
    return NewKey(key=key, prefix=key[: len(kind) + 1 + PREFIX_SECRET_CHARS], digest=digest(key))


class HashedKey(models.Model):
    """Abstract: a key's digest and prefix with its lifetime. Subclasses set KIND and add whom the key is for."""

    KIND = ""

    prefix = models.CharField(_("prefix"), max_length=32, db_index=True, editable=False)
    digest = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(_("created"), default=timezone.now, editable=False)
    expires_at = models.DateTimeField(_("expires"))
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(_("revoked"), null=True, blank=True, editable=False)

    class Meta:
        abstract = True

    @classmethod
    def issue(cls, **fields) -> tuple[Self, str]:
        """A new (unsaved) row and its key: the only time the key exists outside the client."""
        new = new_key(cls.KIND)
        return cls(prefix=new.prefix, digest=new.digest, **fields), new.key

    @classmethod
    def find(cls, key: str, queryset: QuerySet | None = None) -> Self | None:
        """The row for `key`, revoked or expired ones included (callers say why it is refused), or None.
        Looked up by the prefix, then the digest is compared in constant time."""
        if not key.startswith(f"{cls.KIND}_"):
            return None
        prefix = key[: len(cls.KIND) + 1 + PREFIX_SECRET_CHARS]
        wanted = digest(key)
        candidates = (queryset if queryset is not None else cls._default_manager.all()).filter(prefix=prefix)
        for candidate in candidates:
            if hmac.compare_digest(candidate.digest, wanted):
                return candidate
        return None

    def is_expired(self, now: datetime | None = None) -> bool:
        return self.expires_at <= (now or timezone.now())

    def is_active(self, now: datetime | None = None) -> bool:
        return self.revoked_at is None and not self.is_expired(now)

    STATE_LABELS = {"active": _("active"), "expired": _("expired"), "revoked": _("revoked")}

    @property
    def state(self) -> str:
        """ "active", "expired" or "revoked" (a code: for the API and CSS)."""
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.is_expired() else "active"

    @property
    def state_label(self) -> str:
        return str(self.STATE_LABELS[self.state])
