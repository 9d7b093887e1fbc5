"""Logging pieces the settings refer to."""

import logging


class ClientErrorsWithoutTraceback(logging.Filter):
    """A 403 or 404 is the portal working as meant (another tenant's object, a support engineer's read-only
    view): log the one line, not the traceback of the PermissionDenied or Http404 behind it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if 400 <= getattr(record, "status_code", 0) < 500:
            record.exc_info = record.exc_text = None
        return True
