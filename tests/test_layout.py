"""The shape of the code: one room per capability, kept that way.

No import cycles between the project's modules (a cycle held open by an import inside a function still counts:
it is the same knot, only hidden); no module grows past what a reader takes in; only portal/pages.py reads
htmx's request headers; every periodic task names a task the worker knows, under names that do not change.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from django.conf import settings

from portal.celery import app

PACKAGES = ("portal", "tenants", "workloads")
MAX_LINES = 600


def modules() -> dict[str, Path]:
    base = Path(settings.BASE_DIR)
    found = {}
    for package in PACKAGES:
        for path in (base / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(base).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """Project modules `path` imports, at module level or inside a function alike."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = (
                importlib.util.resolve_name("." * node.level + (node.module or ""), package)
                if node.level
                else node.module
            )
            for alias in node.names:
                # `from a.b import c` imports the module a.b.c when there is one, else names from a.b.
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {module for module in found if module in known and module != name}


def cycles() -> list[list[str]]:
    found = modules()
    known = set(found)
    graph = {name: imports_of(path, name, known) for name, path in found.items()}
    result, state, stack = [], {}, []

    def visit(node: str) -> None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                result.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return result


def test_no_import_cycles():
    found = cycles()
    assert not found, "Import cycles (break them by moving the shared part down a layer):\n" + "\n".join(
        " → ".join(cycle) for cycle in found
    )


def test_the_cycle_check_sees_imports_inside_functions(tmp_path):
    # Guards the check itself: a lazy import is an edge like any other.
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from portal import pages\n")
    assert imports_of(module, "portal.m", {"portal.m", "portal.pages", "portal"}) == {"portal.pages"}


def test_no_module_is_too_long_to_read():
    long = {
        str(path.relative_to(settings.BASE_DIR)): n
        for path in modules().values()
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"Split these along their seams (over {MAX_LINES} lines): {long}"


def test_only_portal_pages_reads_the_htmx_headers():
    """Views render through portal.pages (render_page, is_fragment), which also sets Vary: HX-Request."""
    readers = [
        str(path.relative_to(settings.BASE_DIR))
        for name, path in modules().items()
        if name != "portal.pages" and ("request.htmx" in path.read_text() or "vary_on_headers" in path.read_text())
    ]
    assert not readers, f"Use portal.pages instead of reading request.htmx / vary_on_headers: {readers}"


# Registered task names never change: beat's database rows and messages already queued name them.
STABLE_TASK_NAMES = {
    "tenants.tasks.refresh_allocation_statuses",
    "workloads.tasks.notify_case_event",
    "workloads.cluster_tasks.provision_cluster",
    "workloads.cluster_tasks.delete_cluster",
    "workloads.cluster_tasks.delete_cloud_cluster",
    "workloads.cluster_tasks.poll_clusters",
    "workloads.cluster_tasks.poll_cluster_batch",
}


def test_tasks_are_found_without_listing_modules_and_keep_their_names():
    assert not getattr(settings, "CELERY_IMPORTS", None), "task modules are discovered, not listed"
    app.loader.import_default_modules()
    assert set(app.tasks) >= STABLE_TASK_NAMES


def test_every_beat_schedule_entry_names_a_registered_task():
    app.loader.import_default_modules()
    unknown = {
        key: entry["task"] for key, entry in settings.CELERY_BEAT_SCHEDULE.items() if entry["task"] not in app.tasks
    }
    assert not unknown, unknown
