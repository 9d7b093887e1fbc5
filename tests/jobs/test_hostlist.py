"""Slurm host lists: expanded by python-hostlist, bounded by our count before a single name is built."""

import hostlist
import pytest

from workloads.jobs import sacct
from workloads.jobs.sacct import MAX_NODES, expand_nodelist, nodelist_size


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("ip-10-1-0-7", ["ip-10-1-0-7"]),
        ("ip-10-1-0-[1-3,7]", ["ip-10-1-0-1", "ip-10-1-0-2", "ip-10-1-0-3", "ip-10-1-0-7"]),
        ("node[08-10]", ["node08", "node09", "node10"]),
        ("rack[1-2]-n[1-2]", ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]),
        ("p5-dy-p5-[1-2],p5-st-p5-1", ["p5-dy-p5-1", "p5-dy-p5-2", "p5-st-p5-1"]),
    ],
)
def test_host_lists_expand_as_slurm_writes_them(text, names):
    assert expand_nodelist(text) == names
    assert nodelist_size(text) == len(names)


@pytest.mark.parametrize("text", ["a[1-2", "a1-2]", "a[[1]]", "a[2-1]", "a[x]", "a,,b", "a[1-]"])
def test_malformed_host_lists_are_refused(text):
    with pytest.raises(ValueError):
        expand_nodelist(text)


def test_the_library_does_the_expanding(monkeypatch):
    calls = []
    real = hostlist.expand_hostlist
    monkeypatch.setattr(hostlist, "expand_hostlist", lambda text, **kw: calls.append(text) or real(text, **kw))
    assert expand_nodelist("n[1-2]") == ["n1", "n2"]
    assert calls == ["n[1-2]"]


def test_a_list_past_the_bound_is_refused_before_expanding(monkeypatch):
    """python-hostlist bounds each part (MAX_SIZE), not the whole list: many parts under its bound add up past
    ours. Ours counts first, so the library is never asked to write them out."""
    monkeypatch.setattr(hostlist, "expand_hostlist", lambda *a, **kw: pytest.fail("expanded before the count"))
    many_parts = ",".join(f"r{n}-[1-{MAX_NODES // 4}]" for n in range(5))
    with pytest.raises(ValueError, match="more than"):
        expand_nodelist(many_parts)
    with pytest.raises(ValueError, match="more than"):
        expand_nodelist("a[0-99999]b[0-99999]")  # ten billion names from twenty characters


def test_the_bound_is_ours_not_the_librarys():
    assert sacct.MAX_NODES < hostlist.MAX_SIZE
