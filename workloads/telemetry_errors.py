"""The one error the telemetry parsers raise (sacct, DCGM exporter text, nccl-tests logs).

Every parser either returns its whole result or raises ParseError: a report is never half
ingested. The message names the 1-based line and the problem in plain words, so the ingest
API can hand it straight back to whoever posted the report.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from django.core.exceptions import ValidationError


class ParseError(ValueError):
    """A report the parsers refuse; `line_number` is 1-based, or None when no single line is at fault."""

    def __init__(self, line_number: int | None, message: str) -> None:
        self.line_number = line_number
        self.message = message
        super().__init__(f"line {line_number}: {message}" if line_number is not None else message)


@contextmanager
def field_errors(field: str) -> Iterator[None]:
    """A ParseError inside becomes a ValidationError on `field` ("line 12: …"): the API answers it as a 400 naming
    the field, the line and the problem, like any other bad input."""
    try:
        yield
    except ParseError as error:
        raise ValidationError({field: [str(error)]}) from error
