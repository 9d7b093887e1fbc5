"""nccl-tests logs: the collective read from the log and judged only against its own baseline;
logs printed with -I 1 / -S 1 and MPICH rank prefixes read; impossible values refused whole."""

import re
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from tests.factories import ClusterFactory, instance_type
from tests.validation.test_nccl import SRUN_LOG, unprefixed
from workloads.models import Cluster, NcclBaseline, NcclValidation, SupportCase
from workloads.reporting.services import issue_token
from workloads.telemetry_errors import ParseError
from workloads.validation.nccl import busbw_ceiling, check_plausible, parse_nccl_log

ALLTOALL_LOG = (Path(__file__).parent.parent / "samples" / "nccl_alltoall_h100_1node.txt").read_text()
P5_ROWS = parse_nccl_log(SRUN_LOG).rows  # the real p5 rows, 8 B to 16 GiB


def _float(value: float, width: int) -> str:
    """util.cu getFloatStr: %.2f, else %.1f, else %.0f, else %.1e / %.0e, whichever fits the width."""
    for form in (f"{value:{width}.2f}", f"{value:{width}.1f}", f"{value:{width}.0f}"):
        if len(form) <= width:
            return form
    return f"{value:{width}.1e}" if width >= 7 else f"{value:{width}.0e}"


def printed(rows=P5_ROWS, *, per_iteration=False, timestamps=False, prefix="", wrong="0") -> str:
    """An nccl-tests table as src/util.cu @ a0b82b2 prints it (writeResultHeader, writeBenchmarkLinePreamble/Body,
    writePerIterReport, writeTimestamp), with the real p5 figures."""
    label, fmt = ("timestamp", "%Y-%m-%d %H:%M:%S") if timestamps else ("", "")
    pad = 19 if timestamps else 0
    lead = f"# {'size':>10}  {'count':>12}  {'type':>8}  {'redop':>6}  {'root':>6}"
    units = f"# {'(B)':>10}  {'(elements)':>12}  {'':>8}  {'':>6}  {'':>6}"
    if per_iteration:
        group = ["time", "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%"]
        widths = [7, 6, 6, 6, 7, 7, 7, 7]
        unit = ["(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)"]
    else:
        group, widths, unit = ["time", "algbw", "busbw", "#wrong"], [7, 6, 6, 6], ["(us)", "(GB/s)", "(GB/s)", ""]
    header = lead + "".join(f"  {w:>{n}}" for w, n in zip(group * 2, widths * 2, strict=True)) + f" {label:>{pad}}"
    units += "".join(f"  {w:>{n}}" for w, n in zip(unit * 2, widths * 2, strict=True)) + f" {fmt:>{pad}}"
    lines = ["#", header, units]
    for row in rows:
        line = f"{row.size_bytes:12d}  {row.count:12d}  {row.type:>8}  {row.redop:>6}  {row.root:6d}"
        for m in (row.out_of_place, row.in_place):
            line += (
                f"  {_float(m.time_us, 7):>7}  {_float(m.algbw_gbps, 6):>6}  {_float(m.busbw_gbps, 6):>6}  {wrong:>6}"
            )
            if per_iteration:  # min max p99 cv%
                line += "".join(
                    f"  {_float(v, 7):>7}" for v in (m.time_us * 0.9, m.time_us * 1.2, m.time_us * 1.1, 3.5)
                )
        if timestamps:
            line += f"{'2026-11-25 09:14:07':>21}"
        lines.append(line)
    lines += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 120.5 ", "#", "# Collective test concluded: x"]
    return "".join(f"{prefix.format(rank=0)}{line}\n" for line in lines)


# -- the collective --------------------------------------------------------------------------------


def test_the_real_alltoall_log_names_its_collective():
    run = parse_nccl_log(ALLTOALL_LOG)
    assert run.collective == "alltoall"
    assert (run.peak_busbw_gbps, run.hosts, run.ranks, run.avg_busbw_gbps) == (337.99, ("Node1",), 4, 336.445)


def test_an_older_log_is_named_by_the_binary_its_command_line_runs():
    log = "mpirun -np 16 ./build/reduce_scatter_perf -b 8 -e 16G -f 2 -g 1\n" + unprefixed(SRUN_LOG)
    assert parse_nccl_log(log).collective == "reduce_scatter"
    assert parse_nccl_log(unprefixed(SRUN_LOG)).collective is None  # nothing says: the caller decides
    both = "./build/all_reduce_perf -b 8\n./build/alltoall_perf -b 8\n" + unprefixed(SRUN_LOG)
    assert parse_nccl_log(both).collective is None  # two binaries named: neither is trusted


def test_the_banner_wins_over_a_command_line_and_keeps_an_unknown_binary_name():
    banner = "# Collective test starting: all_gather_perf_mpi\n"
    assert parse_nccl_log("./alltoall_perf\n" + banner + unprefixed(SRUN_LOG)).collective == "all_gather"
    assert parse_nccl_log("# Collective test starting: my_bench\n" + unprefixed(SRUN_LOG)).collective == "my_bench"


def test_an_old_alltoall_table_with_a_blank_op_is_read():
    # nccl-tests issue #78 (github.com/NVIDIA/nccl-tests/issues/78): alltoall on 8 nodes of 8x V100, 2021, its header
    # and first row as posted; old nccl-tests printed the op of alltoall as blanks.
    log = (
        "mpirun -np 64 ./build/alltoall_perf -b 256M -e 512M -f 2 -g 1\n"
        "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
        "#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)  \n"
        "   268435456       1048576     float           520935    0.52    0.51  0e+00   519562    0.52    0.51  1e+00\n"
    )
    run = parse_nccl_log(log)
    assert (run.collective, run.rows[0].redop, run.rows[0].in_place.max_error, run.peak_busbw_gbps) == (
        "alltoall",
        "none",
        1.0,
        0.51,
    )


# -- output options ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"per_iteration": True},
        {"timestamps": True},
        {"per_iteration": True, "timestamps": True},
        {"prefix": "[{rank}] "},  # MPICH / Intel MPI -prepend-rank, -l
        {"prefix": "[{rank}] ", "per_iteration": True, "timestamps": True},
    ],
)
def test_current_output_options_are_read_to_the_same_figures(options):
    plain, run = parse_nccl_log(printed()), parse_nccl_log(printed(**options))
    assert len(run.rows) == 32
    assert [(r.size_bytes, r.out_of_place, r.in_place) for r in run.rows] == [
        (r.size_bytes, r.out_of_place, r.in_place) for r in plain.rows
    ]
    assert (run.peak_busbw_gbps, run.peak_size_bytes) == (487.26, 16 * 2**30)


def test_a_row_whose_timestamp_is_not_one_is_refused():
    log = printed(timestamps=True).replace("2026-11-25 09:14:07", "2026-11-25 09:14:0x", 1)
    with pytest.raises(ParseError, match="line 4: the timestamp '2026-11-25 09:14:0x' is not YYYY-MM-DD HH:MM:SS"):
        parse_nccl_log(log)


def test_a_per_iteration_row_short_of_a_figure_is_refused():
    log = printed(per_iteration=True).splitlines(keepends=True)
    log[3] = log[3].rsplit(" ", 1)[0] + "\n"
    with pytest.raises(ParseError, match="line 4: expected 21 columns"):
        parse_nccl_log("".join(log))


def test_a_large_wrong_count_printed_with_g_is_read():
    run = parse_nccl_log(printed(P5_ROWS[-1:], wrong="1e+06"))
    assert run.rows[0].out_of_place.wrong == 1_000_000


def test_a_complete_log_without_its_final_line_feed_is_read():
    assert len(parse_nccl_log(printed(timestamps=True).rstrip("\n")).rows) == 32


# -- plausibility ---------------------------------------------------------------------------------


def test_the_p5_ceiling_is_nvlink_with_a_margin():
    assert busbw_ceiling("p5.48xlarge", 3200) == 1125.0  # 1.25 x 900 GB/s NVLink 4 (EFA: 400 GB/s)
    assert busbw_ceiling("p4d.24xlarge", 400) == 750.0
    assert busbw_ceiling("x9.unknown") == 2250.0  # a type not listed: NVLink 5's 1,800 GB/s


def test_the_trn1_ceiling_is_neuronlink_v2_with_a_margin():
    # NeuronLink-v2: 384 GiB/s per device on trn1.32xlarge, 768 on trn1n (EFA 800 / 1,600 Gbps: 100 / 200 GB/s).
    assert busbw_ceiling("trn1.32xlarge", 800) == pytest.approx(1.25 * 384 * 2**30 / 1e9)  # 515.4 GB/s
    assert busbw_ceiling("trn1n.32xlarge", 1600) == pytest.approx(1.25 * 768 * 2**30 / 1e9)


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ("487.26", "1e30", "line 39: the in-place busbw 1e+30 GB/s is outside 0 to 1125 GB/s"),
        ("487.26", "-487.26", "line 39: the in-place busbw -487.26 GB/s is outside 0 to 1125 GB/s"),
        ("259.87", "-1", "line 39: the in-place algbw -1 GB/s is below zero"),
        ("66132", "0.00", "line 39: the out-of-place time 0 us is not above zero"),
        ("17179869184", "17179869184000", "line 39: the size 17179869184000 B is beyond any accelerator's memory"),
    ],
)
def test_impossible_values_are_refused_naming_the_line(old, new, problem):
    lines = SRUN_LOG.splitlines(keepends=True)
    assert old in lines[38]
    lines[38] = lines[38].replace(old, new, 1)
    with pytest.raises(ParseError, match=re.escape(problem)):
        check_plausible(parse_nccl_log("".join(lines)), ceiling_gbps=busbw_ceiling("p5.48xlarge", 3200))


def test_an_impossible_average_names_its_line():
    log = printed().replace("Avg bus bandwidth    : 120.5 ", "Avg bus bandwidth    : 9e9 ")
    with pytest.raises(ParseError, match="line 37: the average bus bandwidth 9e[+]09 GB/s is outside 0 to 1125 GB/s"):
        check_plausible(parse_nccl_log(log), ceiling_gbps=1125)


def test_a_negative_size_is_no_whole_number():
    with pytest.raises(ParseError, match="line 8: the size '-8' is not a whole number"):
        parse_nccl_log(SRUN_LOG.replace("0:            8 ", "0:           -8 ", 1))


# -- through the API --------------------------------------------------------------------------------


@pytest.fixture
def cluster(org):
    return ClusterFactory(organization=org, name="p5-train")


@pytest.fixture
def reporter(cluster, member):
    _token, key = issue_token(user=member, cluster=cluster, name="head node")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def post(client, cluster, log, **fields):
    return client.post(f"/api/v1/clusters/{cluster.pk}/nccl-tests/", {"log": log, **fields}, format="json")


def suspect(cluster):
    Cluster.objects.filter(pk=cluster.pk).update(interconnect_suspect_since="2026-11-20T00:00:00Z")


@pytest.mark.django_db
def test_an_alltoall_run_is_kept_not_judged_and_leaves_the_suspect_mark(reporter, cluster):
    suspect(cluster)
    response = post(reporter, cluster, ALLTOALL_LOG)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["collective"], body["verdict"], body["baseline_busbw_gbps"], body["nodes"]) == (
        "alltoall",
        "no_baseline",
        None,
        1,
    )
    assert "No alltoall baseline for p5.48xlarge on 1 nodes" in body["reasons"][0]
    cluster.refresh_from_db()
    assert cluster.interconnect_suspect_since is not None and not SupportCase.objects.exists()


@pytest.mark.django_db
def test_an_alltoall_run_is_judged_by_an_alltoall_baseline_only(reporter, cluster):
    NcclBaseline.objects.create(
        instance_type=instance_type("p5.48xlarge"), collective="alltoall", nodes=1, size_bytes=2**29, busbw_gbps=360
    )
    body = post(reporter, cluster, ALLTOALL_LOG).json()
    assert (body["verdict"], body["baseline_busbw_gbps"], body["fraction"]) == ("passed", 360, 337.99 / 360)
    case = SupportCase.objects.none()
    assert not case.exists()


@pytest.mark.django_db
def test_an_alltoall_run_under_its_baseline_files_the_alltoall_peak(reporter, cluster):
    NcclBaseline.objects.create(
        instance_type=instance_type("p5.48xlarge"), collective="alltoall", nodes=1, size_bytes=2**29, busbw_gbps=700
    )
    body = post(reporter, cluster, ALLTOALL_LOG).json()
    assert body["verdict"] == "suspect"
    assert SupportCase.objects.get().title.startswith("Interconnect suspect on cluster p5-train: alltoall peak 337.99")


@pytest.mark.django_db
def test_an_unnamed_all_reduce_table_is_judged_as_all_reduce_and_the_poster_may_name_it(reporter, cluster):
    body = post(reporter, cluster, SRUN_LOG, nodes=2).json()
    assert (body["collective"], body["verdict"]) == ("all_reduce", "passed")
    other = post(reporter, cluster, SRUN_LOG + "\n", nodes=2, collective="reduce_scatter").json()
    assert (other["collective"], other["verdict"]) == ("reduce_scatter", "no_baseline")


@pytest.mark.django_db
def test_an_unnamed_table_of_another_shape_is_kept_unjudged(reporter, cluster):
    log = unprefixed(ALLTOALL_LOG).replace("# Collective test starting: alltoall_perf\n", "")
    log = log.replace("./build/alltoall_perf", "./build/a2a").replace("# Collective test concluded: alltoall_perf", "#")
    body = post(reporter, cluster, log).json()
    assert (body["collective"], body["verdict"]) == ("", "no_baseline")
    assert "does not say which test ran" in body["reasons"][0]


@pytest.mark.django_db
def test_the_collective_may_be_given_in_the_query_string_of_a_text_post(reporter, cluster):
    url = f"/api/v1/clusters/{cluster.pk}/nccl-tests/?nodes=2&collective=reduce_scatter"
    response = reporter.post(url, SRUN_LOG, content_type="text/plain")
    assert response.status_code == 201, response.json()
    assert response.json()["collective"] == "reduce_scatter"
    bad = reporter.post(url.replace("reduce_scatter", "Robert');DROP"), SRUN_LOG, content_type="text/plain")
    assert bad.status_code == 400 and "collective" in bad.json()


@pytest.mark.django_db
def test_a_poster_naming_another_collective_than_the_log_is_a_400(reporter, cluster):
    response = post(reporter, cluster, ALLTOALL_LOG, collective="all_reduce")
    assert response.status_code == 400
    assert "alltoall" in str(response.json()) and not NcclValidation.objects.exists()


@pytest.mark.django_db
def test_a_1e30_bus_bandwidth_is_a_400_and_does_not_clear_the_mark(reporter, cluster):
    suspect(cluster)
    response = post(reporter, cluster, SRUN_LOG.replace("487.26", "1e30"), nodes=2)
    assert response.status_code == 400
    assert "line 39" in str(response.json()) and "1e+30" in str(response.json())
    cluster.refresh_from_db()
    assert cluster.interconnect_suspect_since is not None and not NcclValidation.objects.exists()


@pytest.mark.django_db
def test_more_nodes_than_the_cluster_has_is_a_400(reporter, cluster):
    response = post(reporter, cluster, SRUN_LOG, nodes=5)
    assert response.status_code == 400
    assert "cluster p5-train has 2" in str(response.json()["nodes"]) and not NcclValidation.objects.exists()


@pytest.mark.django_db
def test_staff_keep_baselines_per_collective(manager_client):
    data = {"instance_type": instance_type("p5.48xlarge").pk, "collective": "alltoall", "nodes": 2,
            "busbw_gbps": 90, "size_gib": 8, "min_fraction": "0.85"}  # fmt: skip
    assert manager_client.post("/program/health-rules/", data).status_code == 302
    kept = NcclBaseline.objects.filter(instance_type__api_name="p5.48xlarge", nodes=2)
    assert sorted(kept.values_list("collective", "busbw_gbps")) == [("all_reduce", 487.0), ("alltoall", 90.0)]
    page = manager_client.get("/program/health-rules/").content.decode()
    assert "<code>alltoall</code>" in page


@pytest.mark.django_db
def test_the_interconnect_page_shows_the_collective_and_not_judged(reporter, cluster, member_client):
    post(reporter, cluster, ALLTOALL_LOG)
    page = member_client.get(f"/clusters/{cluster.pk}/interconnect/").content.decode()
    assert "<code>alltoall</code>" in page and "Not judged" in page
    assert "none for this collective, type and node count: not judged" in page
