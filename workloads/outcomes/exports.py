"""CSV files of milestones and deliverables (portal.exports: a byte-order mark, cells a spreadsheet never runs as a
formula), each of what the reader may see."""

from __future__ import annotations

from django.utils import timezone

from portal.exports import csv_stream
from workloads.outcomes.milestones import MilestoneState


def milestones_csv(states: list[MilestoneState], *, stamp: str):
    header = [
        "organization", "milestone_id", "title", "due_on", "state", "status", "measured_workload", "training_tokens",
        "tokens_trained", "projected_on", "met_at", "evidence",
    ]  # fmt: skip

    def rows():
        for s in states:
            m = s.milestone
            projected = day_of(s.finish.on) if s.finish and s.finish.on and s.state != "met" else None
            yield (
                m.organization.slug, m.pk, m.title, m.due_on, s.state, m.status, m.workload.name if m.workload else "",
                m.target_tokens, s.tokens, projected, m.met_at.isoformat() if m.met_at else None, m.evidence,
            )  # fmt: skip

    return csv_stream(f"milestones-{stamp}", header, rows())


def deliverables_csv(deliverables, *, stamp: str):
    header = [
        "organization", "deliverable_id", "kind", "title", "released_on", "url", "milestone_id", "hf_repo_id",
        "license", "parameters", "run", "evaluated_model_id", "benchmark", "setting", "metric", "score", "authors",
        "venue", "doi", "arxiv_id",
    ]  # fmt: skip

    def rows():
        for d in deliverables:
            yield (
                d.organization.slug, d.pk, d.kind, d.title, d.released_on, d.url, d.milestone_id, d.hf_repo_id,
                d.license, d.parameter_count, d.run.name if d.run else "", d.model_id, d.benchmark, d.setting,
                d.metric, d.score, d.authors, d.venue, d.doi, d.arxiv_id,
            )  # fmt: skip

    return csv_stream(f"deliverables-{stamp}", header, rows())


def day_of(moment) -> str:
    """The program day of a moment (Asia/Tokyo), as the pages and the API read it: never the UTC date."""
    return timezone.localtime(moment).date().isoformat()
