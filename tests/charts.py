"""Reading a chart as a test sees it: the ECharts option a page embeds (json_script) beside its chart."""

import json
import re


def chart_payload(html: str, chart_id: str) -> dict:
    """The option and unit of the chart whose data script has this id, from a page's HTML."""
    match = re.search(rf'<script id="{re.escape(chart_id)}" type="application/json">(.*?)</script>', html, re.S)
    assert match, f"no chart {chart_id} on the page"
    return json.loads(match.group(1))


def series(option: dict, name: str) -> dict:
    """The series of that name (the legend's entry)."""
    found = [s for s in option["series"] if s["name"] == name]
    assert found, f"no series {name!r} among {[s['name'] for s in option['series']]}"
    return found[0]


def values(data: list) -> list:
    """A series' values, whether written plain or as items with their own style or link."""
    return [item["value"] if isinstance(item, dict) else item for item in data]
