"""The embedded default's email backend: one log line per email (subject and recipients, logger portal.mail at
INFO), so the log of `make run` stays readable — and in a worker it is not Celery's redirected standard output,
which reads as a WARNING; EMAIL_CONSOLE_FULL=True prints each whole message, as Django's console backend."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.mail.backends.console import EmailBackend

log = logging.getLogger("portal.mail")


class ConsoleEmailBackend(EmailBackend):
    def write_message(self, message) -> None:
        if settings.EMAIL_CONSOLE_FULL:
            super().write_message(message)
            return
        log.info("Email to %s: %s", ", ".join(message.recipients()), message.subject)
