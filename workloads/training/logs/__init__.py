"""Training logs read into progress points: which formats exist, which one a log is in, and one call to read it.

`parse_log(text, format=None, options=None)` cleans each line (workloads.training.logs.base.clean_line), takes
the format named or detects it (the most specific one with a progress line among the first lines), feeds every line
to that format's parser, and returns a ParsedLog: points in log order (a line printed by several ranks is kept once),
garbled progress lines as problems naming their line, and the count of other lines skipped.
"""

from __future__ import annotations

from workloads.training.logs.base import FORMATS, LineParser, ParsedLog, Point, Problem, clean_line, register

DETECT_LINES = 5_000
# No progress line of any format is near this long; a longer one (a dump, a binary run into the log) is skipped unread,
# so no parser's regular expression ever runs over megabytes of one line.
MAX_LINE_CHARS = 4_096


def detect(lines: list[str]) -> type[LineParser] | None:
    """The first format, in FORMATS' order (the most specific first), with a progress line among the first
    DETECT_LINES: a Megatron-DeepSpeed log also prints DeepSpeed's own `step=` lines, and is Megatron's."""
    window = lines[:DETECT_LINES]
    for parser in FORMATS.values():
        if any(parser.matches(line) for line in window):
            return parser
    return None


def parse_log(
    text: str, *, format: str | None = None, options: dict | None = None, carried: dict | None = None
) -> ParsedLog:
    # Lines are numbered as an editor numbers them (at "\n"), so a problem names the line a person finds; a progress
    # bar redrawn with "\r" in a file is one such line holding every redraw, each fed with that line's number.
    raw = text.split("\n")
    if raw and raw[-1] == "":
        raw.pop()
    entries: list[tuple[int, str]] = []
    too_long = 0  # skipped unread, counted with the other lines
    for number, line in enumerate(raw, start=1):
        redrawn = "\r" in line.rstrip("\r")
        pieces = [piece for piece in line.split("\r") if piece.strip()] if redrawn else [line]
        entries.extend((number, clean_line(piece)) for piece in pieces if len(piece) <= MAX_LINE_CHARS)
        too_long += sum(1 for piece in pieces if len(piece) > MAX_LINE_CHARS)
    parser_class = FORMATS[format] if format else detect([line for _number, line in entries[:DETECT_LINES]])
    if parser_class is None:
        # No progress line yet (a job's start-up output): what every format reads of the run's settings (an
        # argument dump, the Trainer's header) is kept for the chunks that follow.
        return ParsedLog(
            format=None, points=[], problems=[], other_lines=len(raw), settings=_settings(entries, options)
        )
    parser = parser_class(options)
    parser.restore(carried or {})  # where the log's previous chunk left its parser (workloads.training.ingest)
    points: list[Point] = []
    problems: list[Problem] = []
    other = too_long
    for number, line in entries:
        found = parser.feed(line, number)
        if isinstance(found, Point):
            if points and points[-1].iteration == found.iteration and _same(points[-1], found):
                other += 1  # the same iteration printed by another rank
                continue
            points.append(found)
        elif isinstance(found, Problem):
            problems.append(found)
        else:
            other += 1
    return ParsedLog(
        format=parser.name,
        points=points,
        problems=problems,
        other_lines=other,
        settings=parser.settings,
        summary=parser.summary,
        carried=parser.carried(),
    )


def _settings(entries: list[tuple[int, str]], options: dict | None) -> dict:
    settings: dict = {}
    for parser_class in FORMATS.values():
        parser = parser_class(options)
        for number, line in entries:
            parser.feed(line, number)
        settings = {**parser.settings, **settings}  # the most specific format's reading wins
    return settings


def _same(a: Point, b: Point) -> bool:
    keys = ("loss", "consumed_samples", "tokens", "step_seconds")
    return all(getattr(a, key) == getattr(b, key) for key in keys)


__all__ = ["FORMATS", "LineParser", "ParsedLog", "Point", "Problem", "detect", "parse_log", "register"]

# Each format module registers its parser; the order here is the detection order (the most specific first).
from workloads.training.logs import megatron, nemo, torchtitan, deepspeed, neuron, hf_trainer  # noqa: E402, F401, I001
