"""The Prometheus text exposition format (prometheus/docs exposition_formats.md, version 0.0.4), as exporters post
it: read by prometheus_client's own parser (`text_string_to_metric_families`), with the portal's checks on top — the
line at fault named in the error (the library names none), a repeated series, a second HELP/TYPE or a TYPE after
its samples (two scrapes pasted together), a last line without its line feed (maybe cut), counters keeping their
exposed names. DCGM's and Neuron's exporters are both read through `parse_exposition` (workloads.health.dcgm,
workloads.health.neuron)."""

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from prometheus_client.parser import text_string_to_metric_families

from workloads.telemetry_errors import ParseError

METRIC_TYPES = frozenset({"counter", "gauge", "histogram", "summary", "untyped"})
_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
# What Go's strconv.ParseFloat accepts in this format, minus hex floats and underscores (the query path's numbers).
_FLOAT = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity)|nan", re.IGNORECASE)


@dataclass(frozen=True)
class MetricSample:
    name: str
    labels: Mapping[str, str]
    value: float
    timestamp_ms: int | None
    line_number: int


@dataclass(frozen=True)
class Exposition:
    samples: tuple[MetricSample, ...]
    types: Mapping[str, str]  # metric name -> counter, gauge, ... (from the TYPE lines)
    help: Mapping[str, str]  # metric name -> docstring (from the HELP lines)


def parse_exposition(
    text: str, *, check: Callable[[str, Mapping[str, str], float], str | None] | None = None
) -> Exposition:
    """All samples of a Prometheus text exposition; raises ParseError naming the line at fault.

    The syntax is read by prometheus_client's own parser (`text_string_to_metric_families`); its ValueError names no
    line, so the line is found by reading the lines one by one with the same parser. On top of it, refused as
    Prometheus' own (Go) parser refuses them and the lax Python one does not: a second HELP or TYPE for a name, a
    TYPE after that name's samples, a repeated series (same name and labels); and a last sample line without its
    line feed (the format requires one; without it the value may have been cut, "79" arriving as "7"); and a
    value outside its physical bounds (`check`: workloads.health.dcgm passes DCGM's `implausible`).
    """
    lines = text.split("\n")
    types: dict[str, str] = {}
    helps: dict[str, str] = {}
    sample_lines: list[tuple[int, str]] = []  # (line number, stripped text): one sample each, in order
    sampled: set[str] = set()
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()  # as the library strips it, so both agree on which lines are samples
        if not line:
            continue
        if line.startswith("#"):
            _metadata(line, number, types, helps, sampled)
            continue
        if number == len(lines):
            raise ParseError(
                number, "the last line does not end with a line feed: the exposition may have been cut off"
            )
        name = _METRIC_NAME.match(line)
        if name:
            sampled.add(name.group())
        sample_lines.append((number, line))
    try:
        parsed = [sample for family in text_string_to_metric_families(text) for sample in _samples(family)]
    except ValueError as error:
        raise _located(lines, error) from error
    if len(parsed) != len(sample_lines):  # the library reads one sample per sample line; never seen otherwise
        raise ParseError(None, f"read {len(parsed)} samples from {len(sample_lines)} sample lines")
    samples: list[MetricSample] = []
    series: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}  # -> the line that gave it
    for (number, line), (name, labels, value, timestamp) in zip(sample_lines, parsed, strict=True):
        if name.endswith("_total") and not _names(line, name):
            name = name.removesuffix("_total")  # the library adds _total to a counter's samples (OpenMetrics)
        key = (name, tuple(sorted(labels.items())))
        if key in series:
            raise ParseError(number, f"{name} with these labels was already given on line {series[key]}")
        series[key] = number
        try:
            value = float(value)  # the library gives a whole number as an int, of any size
        except OverflowError:
            raise ParseError(number, f"{name}: the value is too large for a number") from None
        problem = check(name, labels, value) if check else None
        if problem:
            raise ParseError(number, problem)
        if timestamp is not None and not math.isfinite(timestamp):
            raise ParseError(number, f"{name}: the timestamp is not a time")
        stamp = round(timestamp * 1000) if timestamp is not None else None
        samples.append(MetricSample(name, MappingProxyType(dict(labels)), value, stamp, number))
    return Exposition(tuple(samples), MappingProxyType(types), MappingProxyType(helps))


def _samples(family):
    for sample in family.samples:
        yield sample.name, sample.labels, sample.value, sample.timestamp


def _names(line: str, name: str) -> bool:
    """Whether a sample line begins with this metric name (bare, or quoted inside the braces)."""
    return line.startswith(name) or line.lstrip("{ \t").startswith(f'"{name}"')


def _located(lines: list[str], error: ValueError) -> ParseError:
    """The library's complaint, with the first line it refuses on its own (it names none)."""
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            list(text_string_to_metric_families(raw + "\n"))
        except ValueError as line_error:
            words = _library_words(line_error)
            return ParseError(number, f"the Prometheus text parser refuses {raw.strip()[:80]!r} ({words})")
    return ParseError(None, _library_words(error))


# The library's complaints (prometheus_client/parser.py) in plain words; its others are passed on as they are.
_LIBRARY_WORDS = {
    "could not convert string to float": "the value is not a number",
    "Invalid value": "the value is not a number",
    "Invalid labels": "the labels cannot be read",
    "invalid metric name": "no valid metric name",
}


def _library_words(error: ValueError) -> str:
    words = str(error).split(":", 1)[0]
    return _LIBRARY_WORDS.get(words, words or "not the Prometheus text format")


def _metadata(line: str, number: int, types: dict[str, str], helps: dict[str, str], sampled: set[str]) -> None:
    tokens = line[1:].split(None, 2)
    if not tokens or tokens[0] not in ("HELP", "TYPE"):
        return  # an ordinary comment
    if len(tokens) < 2 or not _METRIC_NAME.fullmatch(tokens[1]):
        raise ParseError(number, f"{tokens[0]} must be followed by a metric name")
    keyword, name = tokens[0], tokens[1]
    if keyword == "HELP":
        if name in helps:
            raise ParseError(number, f"a second HELP line for {name}")
        helps[name] = _unescape_help(tokens[2] if len(tokens) == 3 else "")
        return
    kind = tokens[2].strip() if len(tokens) == 3 else ""
    if kind not in METRIC_TYPES:
        raise ParseError(number, f"TYPE of {name} must be one of {', '.join(sorted(METRIC_TYPES))}; found {kind!r}")
    if name in types:
        raise ParseError(number, f"a second TYPE line for {name}")
    if name in sampled:
        raise ParseError(number, f"the TYPE line for {name} comes after its samples")
    types[name] = kind


def _unescape_help(text: str) -> str:
    # HELP escapes only \\ and \n; anything else after a backslash is kept as written.
    return re.sub(r"\\([\\n])", lambda m: "\n" if m.group(1) == "n" else "\\", text)
