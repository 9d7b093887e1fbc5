"""The one error the telemetry parsers raise (sacct, DCGM exporter text, nccl-tests logs).

Every parser either returns its whole result or raises ParseError: a report is never half
ingested. The message names the 1-based line and the problem in plain words, so the ingest
API can hand it straight back to whoever posted the report.
"""


class ParseError(ValueError):
    """A report the parsers refuse; `line_number` is 1-based, or None when no single line is at fault."""

    def __init__(self, line_number: int | None, message: str) -> None:
        self.line_number = line_number
        self.message = message
        super().__init__(f"line {line_number}: {message}" if line_number is not None else message)
