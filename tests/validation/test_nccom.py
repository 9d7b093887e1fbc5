"""Trainium's interconnect check: an nccom-test all-reduce log (the Neuron guide's real 2-node trn1 run) posted to
the nccl-tests endpoint, read in GB/s and judged against the trn1 baseline through the same verdict as P5's."""

from pathlib import Path

import pytest

from tests.factories import ClusterFactory
from workloads.models import Cluster, NcclBaseline, SupportCase
from workloads.telemetry_errors import ParseError
from workloads.validation.nccom import is_nccom, parse_nccom_log

pytestmark = pytest.mark.django_db

LOG = (Path(__file__).parent.parent / "samples" / "nccom_test_all_reduce_trn1_2node.txt").read_text()
PEAK_ROW = "    1073741824       268435456    fp32       41806          23.92          47.09\n"
# The guide's single-instance examples, as printed there.
ALL_GATHER = """nccom-test -r 32 --minbytes 1kb --maxbytes 1mb --stepfactor 8 --datatype fp32 --check allg
size(B)    count(elems)    type    time(us)    algbw(GB/s)    busbw(GB/s)
1024             256    fp32         151           0.01           0.01
Avg bus bandwidth:      0.7731GB/s
"""
QUICK = """nccom-test -r 2 allr
     size(B)    count(elems)     type    time(us)    algbw(GB/s)    busbw(GB/s)
    33554432        33554432    uint8         768          40.69          40.69
Avg bus bandwidth:      40.6901GB/s
"""
FAILED = """nccom-test -r 2 allr
     size(B)    count(elems)    type    time(us)    algbw(GB/s)    busbw(GB/s)
    33554432    Failure running neuron-bench - log file /tmp/nccom_test_log_7pqpdfjf.log
1 errors found - test failed
"""


@pytest.fixture
def cluster(org, catalog):
    cluster = ClusterFactory(organization=org, name="trn1-train")
    cluster.groups.update(instance_type="trn1.32xlarge")
    return cluster


def post(client, cluster, log, **fields):
    return client.post(f"/api/v1/clusters/{cluster.pk}/nccl-tests/", {"log": log, **fields}, format="json")


def test_the_guides_log_reads_in_gb_per_s():
    assert is_nccom(LOG) and not is_nccom("#  size  count  type  redop  root  time algbw busbw #wrong\n")
    read = parse_nccom_log(LOG)
    assert (read.collective, read.nodes, read.run.ranks, len(read.run.rows)) == ("all_reduce", 2, 64, 28)
    assert read.run.peak_size_bytes == 2**30
    assert read.run.peak_busbw_gbps == pytest.approx(47.09 * 2**30 / 1e9, abs=1e-3)  # GiB/s in the log
    assert read.run.avg_busbw_gbps == pytest.approx(9.3924 * 2**30 / 1e9)
    assert parse_nccom_log(QUICK).nodes == 1


def test_the_catalog_holds_the_trn1_baseline_from_the_guide():
    baseline = NcclBaseline.objects.get(instance_type__api_name="trn1.32xlarge", nodes=2)
    assert (baseline.busbw_gbps, baseline.size_bytes) == (50.56, 2**30)
    assert "nccom-test.rst" in baseline.source


def test_the_guides_run_passes_against_the_trn1_baseline(member_api, cluster):
    response = post(member_api, cluster, LOG)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["verdict"], body["nodes"], body["instance_type"], body["ranks"]) == ("passed", 2, "trn1.32xlarge", 64)
    assert body["baseline_busbw_gbps"] == 50.56
    assert body["fraction"] == pytest.approx(50.5628 / 50.56, abs=1e-3)
    assert SupportCase.objects.count() == 0


def test_a_slow_trn1_run_is_suspect_and_opens_a_networking_case(member_api, cluster):
    slow = LOG.replace(PEAK_ROW, "").replace(
        "     536870912       134217728    fp32       21803          22.93          45.15\n", ""
    )  # peak now 41.17 GiB/s at 256 MiB: 87% of the baseline
    response = post(member_api, cluster, slow)
    assert response.status_code == 201, response.json()
    assert response.json()["verdict"] == "suspect"
    assert SupportCase.objects.get().category == "networking"
    assert Cluster.objects.get(pk=cluster.pk).interconnect_suspect_since is not None


@pytest.mark.parametrize(
    ("log", "says"),
    [
        (LOG.replace("23.92          47.09", "23.92          1e30"), "line 30: busbw 1e+30 GB/s is more than twice"),
        (LOG.replace("41806          23.92", "41806          2392"), "line 30: algbw 2392 GB/s is not size / time"),
        (LOG.replace("    1073741824       268435456", "    1073741824       268435457"), "not 1073741824 B"),
        (LOG.replace("23.92          47.09", "23.92          -47.09"), "busbw must be a number from 0"),
        # 1 GiB in 1 ms: arithmetic the tool could print, but 2,114 GB/s is past trn1's NeuronLink-v2 (384 GiB/s).
        (
            LOG.replace("41806          23.92          47.09", " 1000        1024.00        2016.00"),
            "line 30: the out-of-place busbw 2164.66 GB/s is outside 0 to 515.396 GB/s",
        ),
        (ALL_GATHER, "all_gather run: only all-reduce"),
        (FAILED, "line 3: nccom-test reported a failed run: Failure running neuron-bench"),
        (LOG.rstrip("\n"), "may have been cut"),
    ],
)
def test_impossible_or_unjudgeable_logs_are_400s_naming_them_and_keep_nothing(member_api, cluster, log, says):
    response = post(member_api, cluster, log)
    assert response.status_code == 400
    assert says in response.json()["log"][0], response.json()
    assert not cluster.validations.exists()


def test_nodes_given_against_the_logs_own_count_is_a_400(member_api, cluster):
    response = post(member_api, cluster, LOG, nodes=3)
    assert response.status_code == 400
    assert "-N" in response.json()["nodes"][0]


def test_a_parse_error_names_no_header():
    with pytest.raises(ParseError, match="never prints nccom-test's"):
        parse_nccom_log("nccom-test -r 2 allr\nAvg bus bandwidth:      40.6901GB/s\n")
