"""The embedded default's email backend: one line per email in the console log (subject and recipients), so the
log of `make run` stays readable; EMAIL_CONSOLE_FULL=True prints each whole message, as Django's console backend."""

from __future__ import annotations

from django.conf import settings
from django.core.mail.backends.console import EmailBackend


class ConsoleEmailBackend(EmailBackend):
    def write_message(self, message) -> None:
        if settings.EMAIL_CONSOLE_FULL:
            super().write_message(message)
            return
        recipients = ", ".join(message.recipients())
        self.stream.write(f"Email to {recipients}: {message.subject}\n")
