"""The real training logs of tests/samples/training/ (SOURCES.md says where each comes from), as the tests read them."""

from __future__ import annotations

from pathlib import Path

from workloads.training.logs import Point

SAMPLES = Path(__file__).resolve().parent.parent / "samples" / "training"


def read(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def lines_of(name: str) -> list[str]:
    return read(name).splitlines()


def by_iteration(points: list[Point]) -> dict[int, Point]:
    return {point.iteration: point for point in points}
