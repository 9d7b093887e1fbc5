"""Text the portal writes itself on a case — an incident's title and account, a condition that cleared — is
composed in every language the portal speaks and kept beside the stored text. The stored `title`, `description`
and `body` are in the organization's language (the API, search and the organization's mail read those); pages
show each reader the text in their own language (`for_reader`), so an English-speaking engineer reads an Xid
case opened for a Japanese organization in English, and its Japanese admin reads it in Japanese."""

from collections.abc import Callable

from django.conf import settings
from django.utils import translation


def in_each_language[T](compose: Callable[[], T]) -> dict[str, T]:
    """`compose()` called once under each of settings.LANGUAGES: {"en": …, "ja": …}."""
    written = {}
    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            written[code] = compose()
    return written


def for_reader(stored: str, written: dict[str, str]) -> str:
    """The text in the active language when the portal wrote it in that language, otherwise as stored (what a
    person wrote is shown as they wrote it)."""
    if not written:
        return stored
    language = translation.get_language() or settings.LANGUAGE_CODE
    return written.get(language) or written.get(language.split("-")[0]) or stored


def in_language_of[T](organization, written: dict[str, T]) -> T:
    """The organization's own version of what `in_each_language` composed: the text the case stores."""
    return written.get(organization.language or "en") or written[settings.LANGUAGE_CODE]
