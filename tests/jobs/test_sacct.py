"""The sacct parser on hand-written reports shaped like Slurm's -P output, and on generated tables."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.jobs.sacct_rows import HEADER, TOKYO, line
from workloads.jobs.sacct import (
    JOB_STATES,
    MAX_JOB_NAME,
    MAX_NAME,
    SACCT_COMMAND,
    SacctJob,
    accelerator_hours,
    accelerator_seconds,
    parse_exclusive_partitions,
    parse_sacct,
)
from workloads.telemetry_errors import ParseError


def parse(*lines, **kwargs):
    return parse_sacct("\n".join(lines) + "\n", tz=TOKYO, **kwargs)


def test_a_report_with_its_header_parses_every_field():
    (job,) = parse(HEADER, line())
    assert job == SacctJob(
        job_id="1001",
        name="pretrain-8b",
        user="alice",
        account="sakura",
        partition="p5",
        state="COMPLETED",
        cancelled_by_uid=None,
        submit=datetime(2026, 11, 20, 9, 15, 2, tzinfo=TOKYO),
        start=datetime(2026, 11, 20, 9, 16, tzinfo=TOKYO),
        end=datetime(2026, 11, 20, 11, 16, tzinfo=TOKYO),
        elapsed_seconds=7200,
        node_count=1,
        node_list="p5-dy-p5-1",
        accelerators=8,
        accelerator_kind="gpu",
        accelerator_type="h100",
        accelerators_source="alloc_tres",
        line_number=2,
    )
    assert job.start.utcoffset() == timedelta(hours=9)  # local cluster time, made aware


def test_the_header_is_detected_so_noheader_output_gives_the_same_jobs():
    with_header = parse(HEADER, line("1"), line("2"))
    without = parse(line("1"), line("2"))
    assert [j.job_id for j in with_header] == [j.job_id for j in without] == ["1", "2"]
    assert [j.accelerators for j in with_header] == [j.accelerators for j in without]


def test_the_header_is_recognised_whatever_its_case():
    assert parse(HEADER.upper(), line())[0].job_id == "1001"


def test_a_header_repeated_in_the_middle_of_pasted_reports_is_skipped_and_a_repeated_job_keeps_its_last_row():
    jobs = parse(HEADER, line("1", state="RUNNING", end="Unknown"), line("2"), HEADER, line("1"))
    assert [(j.job_id, j.state, j.line_number) for j in jobs] == [("1", "COMPLETED", 5), ("2", "COMPLETED", 3)]


def test_a_header_with_other_columns_is_refused_with_the_command_to_run():
    with pytest.raises(ParseError, match=r"line 1: the header lists JobID\|State; expected JobID\|JobName") as err:
        parse("JobID|State", line())
    assert "sacct -a -X -P" in str(err.value)
    assert err.value.line_number == 1


def test_trailing_newline_blank_lines_and_crlf_are_tolerated():
    text = f"{HEADER}\r\n\r\n{line('1')}\r\n\n{line('2')}\n\n"
    assert [j.job_id for j in parse_sacct(text, tz=TOKYO)] == ["1", "2"]
    assert parse_sacct("", tz=TOKYO) == ()
    assert parse_sacct("\n\n", tz=TOKYO) == ()


# -- Accelerators ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tres", "count", "kind", "model"),
    [
        ("cpu=192,gres/gpu:h100=8,gres/gpu=8,mem=2000G,node=1", 8, "gpu", "h100"),  # typed is a breakdown
        ("cpu=192,gres/gpu=8,gres/gpu:h100=8,node=1", 8, "gpu", "h100"),  # in either order
        ("cpu=384,gres/gpu=16,node=2", 16, "gpu", None),  # untyped only
        ("cpu=384,gres/gpu:h100=16,node=2", 16, "gpu", "h100"),  # typed only: their sum
        ("cpu=384,gres/gpu:h100=8,gres/gpu:h200=8,node=2", 16, "gpu", None),  # two types summed
        ("cpu=384,gres/gpu:h100=4,gres/gpu:h200=4,gres/gpu=8,node=1", 8, "gpu", None),  # the total wins
        ("cpu=128,gres/neuron=16,mem=500G,node=1", 16, "neuron", None),
        ("cpu=128,gres/neuron:trainium=16,gres/neuron=16,node=1", 16, "neuron", "trainium"),
        ("cpu=192,gres/gpumem=640G,gres/gpu=8,node=1", 8, "gpu", None),  # gpumem is memory, not GPUs
        ("cpu=192,mem=2000G,node=1", 0, None, None),
    ],
)
def test_accelerators_never_add_typed_entries_to_the_untyped_total(tres, count, kind, model):
    (job,) = parse(line(tres=tres))
    assert (job.accelerators, job.accelerator_kind, job.accelerator_type) == (count, kind, model)


def test_a_job_without_gres_holds_no_accelerators_on_a_shared_partition():
    """The report's 3-node CPU-only job on a GPU cluster: 0, not 8 per node."""
    cpu_only = line(nnodes="3", nodelist="p5-dy-p5-[1-3]", tres="billing=288,cpu=288,mem=96G,node=3")
    (job,) = parse(cpu_only, accelerators_per_node=8)
    assert (job.accelerators, job.accelerator_kind, job.accelerators_source) == (0, None, "none")
    (job,) = parse(cpu_only, accelerators_per_node=8, exclusive_partitions=frozenset({"other"}))
    assert (job.accelerators, job.accelerators_source) == (0, "none")


def test_a_job_without_gres_on_an_exclusive_partition_holds_its_nodes_accelerators():
    trn1 = line(partition="trn1", nnodes="4", tres="billing=512,cpu=512,mem=2000G,node=4")
    (job,) = parse(trn1, accelerators_per_node=16, exclusive_partitions=frozenset({"trn1"}))
    assert (job.accelerators, job.accelerator_kind, job.accelerators_source) == (64, None, "exclusive_node")


def test_gres_wins_over_whole_nodes_and_a_pending_job_holds_none():
    exclusive = frozenset({"p5"})
    (job,) = parse(
        line(nnodes="2", tres="cpu=384,gres/gpu=4,node=2"), accelerators_per_node=8, exclusive_partitions=exclusive
    )
    assert (job.accelerators, job.accelerators_source) == (4, "alloc_tres")
    pending = line(
        state="PENDING", start="Unknown", end="Unknown", elapsed="0", nnodes="2", nodelist="None assigned", tres=""
    )
    (job,) = parse(pending, accelerators_per_node=16, exclusive_partitions=exclusive)
    assert (job.accelerators, job.node_count, job.node_list, job.accelerators_source) == (0, 2, "", "none")


def test_an_end_before_its_start_is_refused():
    with pytest.raises(ParseError, match=r"line 2: job 1001: End 2026-11-20T09:00:00 is before its Start"):
        parse(HEADER, line(start="2026-11-20T09:16:00", end="2026-11-20T09:00:00"))


@pytest.mark.parametrize(
    ("row", "says"),
    [
        (line(submit="2026-11-20T10:00:00", start="2026-11-20T09:16:00"), "Start 2026-11-20T09:16:00 is before its"),
        (line(nnodes="0"), "NNodes is 0, but the job started"),
        (line(nnodes="0", start="Unknown", end="Unknown", state="RUNNING"), "NNodes is 0, but the job started"),
        (line(name="x" * (MAX_JOB_NAME + 1)), f"JobName is 256 characters: sacct prints at most {MAX_JOB_NAME}"),
        (line(name="x" * 100_000), "JobName is 100,000 characters"),
        (line(account="a" * (MAX_NAME + 1)), f"Account 'aaaa.*is 65 characters: at most {MAX_NAME}"),
    ],
)
def test_a_row_that_cannot_be_is_refused(row, says):
    with pytest.raises(ParseError, match=f"line 2: .*{says}"):
        parse(HEADER, row)


def test_what_the_bounds_let_through_fits_the_job_columns():
    from workloads.jobs.models import Job

    never_ran = line(state="CANCELLED", start="None", end="None", nnodes="0", nodelist="None assigned", tres="")
    job = parse(never_ran.replace("pretrain-8b", "x" * MAX_JOB_NAME).replace("alice", "u" * MAX_NAME))[0]
    assert job.node_count == 0 and job.start is None  # a job that never started may ask for no node
    for column in ("name", "user", "account", "partition"):
        assert len(getattr(job, column)) <= Job._meta.get_field(column).max_length
    assert Job._meta.get_field("name").max_length == MAX_JOB_NAME


def test_exclusive_partitions_are_read_from_scontrol():
    one_line = (
        "PartitionName=p5 AllowGroups=ALL Default=YES JobDefaults=(null) Nodes=p5-dy-p5-[1-4] "
        "OverSubscribe=EXCLUSIVE State=UP TRES=cpu=768,mem=8000G,node=4,billing=768,gres/gpu=32\n"
        "PartitionName=cpu AllowGroups=ALL Default=NO Nodes=c7i-[1-2] OverSubscribe=NO State=UP\n"
        "PartitionName=old Shared=EXCLUSIVE\n"
        "PartitionName=shared OverSubscribe=FORCE:4\n"
    )
    assert parse_exclusive_partitions(one_line) == {"p5", "old"}
    # Without -o: one record over several indented lines.
    assert parse_exclusive_partitions("PartitionName=trn1\n   AllowGroups=ALL\n   OverSubscribe=EXCLUSIVE\n") == {
        "trn1"
    }
    assert parse_exclusive_partitions("") == frozenset()
    with pytest.raises(ParseError, match="line 1: expected key=value words"):
        parse_exclusive_partitions("No partitions in the system")
    with pytest.raises(ParseError, match="before any PartitionName"):
        parse_exclusive_partitions("OverSubscribe=EXCLUSIVE")


def test_a_job_with_gpus_and_neuron_devices_is_refused():
    with pytest.raises(ParseError, match="line 1: AllocTRES names both GPUs and Neuron devices"):
        parse(line(tres="gres/gpu=8,gres/neuron=16"))


@pytest.mark.parametrize(
    ("tres", "problem"),
    [
        ("cpu=192,gres/gpu", "AllocTRES entries look like name=count; found 'gres/gpu'"),
        ("gres/gpu=8,gres/gpu=8", "AllocTRES lists gres/gpu twice"),
        ("gres/gpu=eight", "gres/gpu must be a whole number, found 'eight'"),
    ],
)
def test_a_malformed_alloc_tres_is_refused(tres, problem):
    with pytest.raises(ParseError, match=f"line 2: {problem}"):
        parse(HEADER, line(tres=tres))


def test_accelerators_per_node_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        parse(line(), accelerators_per_node=0)


# -- Job ids and states ---------------------------------------------------------------------------


def test_array_tasks_pending_arrays_and_het_components_are_distinct_jobs():
    ids = ["123", "123_4", "123_5", "123_[6-10]", "123_[11,13,15-20%2]", "124+0", "124+1"]
    jobs = parse(*(line(job_id) for job_id in ids))
    assert [job.job_id for job in jobs] == ids


@pytest.mark.parametrize("step", ["123.batch", "123.extern", "123.0", "123_4.0", "124+1.batch"])
def test_a_job_step_means_sacct_ran_without_x(step):
    with pytest.raises(ParseError, match=f"line 1: {step.replace('+', '[+]')} is a job step: run sacct with -X"):
        parse(line(step))


@pytest.mark.parametrize("job_id", ["", "abc", "123_", "123_[", "12 3", "-5"])
def test_a_job_id_that_is_none_of_slurms_forms_is_refused(job_id):
    with pytest.raises(ParseError, match="line 1: JobID must look like 123"):
        parse(line(job_id))


def test_cancelled_by_a_uid_keeps_the_base_state_and_who_cancelled():
    jobs = parse(line("1", state="CANCELLED by 0"), line("2", state="CANCELLED by 1001"), line("3", state="CANCELLED"))
    assert [(j.state, j.cancelled_by_uid) for j in jobs] == [("CANCELLED", 0), ("CANCELLED", 1001), ("CANCELLED", None)]


@pytest.mark.parametrize(
    "state",
    [
        "RUNNING",
        "PENDING",
        "COMPLETED",
        "FAILED",
        "TIMEOUT",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REQUEUED",
        "SUSPENDED",
        "BOOT_FAIL",
        "DEADLINE",
        "COMPLETING",
        "REQUEUE_HOLD",
        "RESIZING",
    ],
)
def test_every_state_slurm_prints_is_kept(state):
    assert parse(line(state=state))[0].state == state


@pytest.mark.parametrize("state", ["", "running", "DONE", "COMPLETED by 0", "CANCELLED by root", "CANCELLED+"])
def test_an_unknown_state_is_refused(state):
    with pytest.raises(ParseError, match="line 1: unknown job state"):
        parse(line(state=state))


# -- Times ----------------------------------------------------------------------------------------


def test_unknown_none_and_empty_times_are_none():
    running = line("1", state="RUNNING", end="Unknown")
    pending = line("2", state="PENDING", start="Unknown", end="Unknown", elapsed="0", tres="")
    never = line("3", state="PENDING", start="None", end="None", elapsed="0", tres="")
    blank = line("4", state="PENDING", submit="", start="", end="", elapsed="0", tres="")
    jobs = parse(running, pending, never, blank)
    assert [(j.start is None, j.end is None) for j in jobs] == [(False, True), (True, True), (True, True), (True, True)]
    assert jobs[3].submit is None


def test_times_take_the_clusters_zone_not_the_servers():
    (job,) = parse_sacct(line() + "\n", tz=ZoneInfo("America/New_York"))
    assert job.submit.astimezone(UTC) == datetime(2026, 11, 20, 14, 15, 2, tzinfo=UTC)


def test_a_zone_is_required():
    with pytest.raises(TypeError, match="tzinfo"):
        parse_sacct(line(), tz=None)


@pytest.mark.parametrize(
    "value", ["2026-11-20 09:15:02", "2026-13-20T09:15:02", "20 Nov 2026", "2026-11-20T09:15", "now"]
)
def test_a_time_in_another_format_is_refused_naming_the_column(value):
    with pytest.raises(
        ParseError, match=f"line 2: Start must be a time like 2026-11-20T09:15:02, Unknown or None; found '{value}'"
    ):
        parse(HEADER, line(start=value))


# -- Damaged reports ------------------------------------------------------------------------------


def test_a_line_with_too_few_fields_names_the_line_and_the_counts():
    short = "|".join(line("7").split("|")[:11])
    with pytest.raises(ParseError) as err:
        parse(HEADER, line("1"), line("2"), "", "", line("5"), short)
    assert str(err.value) == "line 7: expected 13 fields separated by |, found 11"
    assert err.value.line_number == 7


def test_a_report_cut_mid_line_is_refused_not_half_parsed():
    text = HEADER + "\n" + line("1") + "\n" + line("2")
    cut = text[: text.rindex("|") - 3]  # the last line loses its AllocTRES and part of NodeList
    with pytest.raises(ParseError, match="line 3: expected 13 fields"):
        parse_sacct(cut, tz=TOKYO)


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("elapsed", "2:00:00", "ElapsedRaw must be a whole number, found '2:00:00'"),
        ("elapsed", "-1", "ElapsedRaw must be a whole number, found '-1'"),
        ("nnodes", "", "NNodes must be a whole number, found ''"),
        ("nnodes", "２", "NNodes must be a whole number, found '２'"),
    ],
)
def test_numbers_must_be_whole_numbers(field, value, problem):
    with pytest.raises(ParseError, match=f"line 1: {problem}"):
        parse(line(**{field: value}))


def test_a_pipe_typed_into_a_job_name_stays_in_the_name():
    (job,) = parse(HEADER, line(name="eval|mmlu|5-shot"))
    assert (job.name, job.user, job.accelerators) == ("eval|mmlu|5-shot", "alice", 8)


def test_the_command_asks_for_exactly_the_parsed_columns():
    assert SACCT_COMMAND == (
        "sacct -a -X -P --format=JobID,JobName,User,Account,Partition,State,Submit,Start,End,ElapsedRaw,NNodes,"
        "NodeList,AllocTRES"
    )


# -- Accelerator time -----------------------------------------------------------------------------


def test_a_running_job_counts_from_start_to_now():
    (job,) = parse(
        line(
            state="RUNNING",
            start="2026-11-20T09:00:00",
            end="Unknown",
            nnodes="2",
            tres="cpu=384,gres/gpu:h100=16,gres/gpu=16,node=2",
        )
    )
    now = datetime(2026, 11, 20, 11, 30, tzinfo=TOKYO)
    assert accelerator_hours(job, now=now) == 16 * 2.5
    assert accelerator_seconds(job, now=now.astimezone(UTC)) == 16 * 2.5 * 3600  # any zone for now


def test_a_finished_job_counts_start_to_end_whatever_now_is():
    (job,) = parse(line(start="2026-11-20T09:00:00", end="2026-11-20T10:00:00"))
    assert accelerator_hours(job, now=datetime(2026, 12, 1, tzinfo=TOKYO)) == 8.0


def test_nothing_counts_before_a_job_starts():
    pending = parse(line(state="PENDING", start="Unknown", end="Unknown", elapsed="0", tres=""))[0]
    assert accelerator_seconds(pending, now=datetime(2026, 11, 21, tzinfo=TOKYO)) == 0
    (running,) = parse(line(state="RUNNING", start="2026-11-20T09:00:00", end="Unknown"))
    assert accelerator_seconds(running, now=datetime(2026, 11, 20, 8, 0, tzinfo=TOKYO)) == 0
    cancelled_in_queue = parse(line(state="CANCELLED by 0", start="None", end="2026-11-20T10:00:00", tres=""))[0]
    assert accelerator_seconds(cancelled_in_queue, now=datetime(2026, 11, 21, tzinfo=TOKYO)) == 0


def test_since_and_now_cut_a_job_into_a_days_share():
    (job,) = parse(line(start="2026-11-20T22:00:00", end="2026-11-21T03:00:00"))
    midnight = datetime(2026, 11, 21, tzinfo=TOKYO)
    assert accelerator_hours(job, since=midnight - timedelta(days=1), now=midnight) == 8 * 2
    assert accelerator_hours(job, since=midnight, now=midnight + timedelta(days=1)) == 8 * 3


def test_a_finished_job_without_an_end_counts_its_elapsed_time_not_up_to_now():
    (job,) = parse(line(state="FAILED", start="2026-11-20T09:00:00", end="Unknown", elapsed="1800"))
    assert accelerator_hours(job, now=datetime(2026, 12, 20, tzinfo=TOKYO)) == 8 * 0.5


def test_accelerator_time_is_real_time_across_a_daylight_saving_change():
    new_york = ZoneInfo("America/New_York")  # 2026-11-01 02:00 EDT -> 01:00 EST
    (job,) = parse_sacct(line(start="2026-11-01T00:30:00", end="2026-11-01T03:30:00") + "\n", tz=new_york)
    assert accelerator_hours(job, now=datetime(2026, 11, 2, tzinfo=new_york)) == 8 * 4


def test_now_must_be_aware():
    with pytest.raises(ValueError, match="aware"):
        accelerator_seconds(parse(line())[0], now=datetime(2026, 11, 21))


# -- A generated table parses back to what was written --------------------------------------------

FREE_TEXT = st.text(st.characters(blacklist_characters="|\n\r", blacklist_categories=("Cs",)), max_size=12)
NAME = st.text(st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",)), max_size=20)
JOB_ID = st.one_of(
    st.integers(1, 10**7).map(str),
    st.tuples(st.integers(1, 10**7), st.integers(0, 10**5)).map(lambda t: f"{t[0]}_{t[1]}"),
    st.tuples(st.integers(1, 10**7), st.integers(0, 99), st.integers(100, 999)).map(
        lambda t: f"{t[0]}_[{t[1]}-{t[2]}]"
    ),
    st.tuples(st.integers(1, 10**7), st.integers(0, 8)).map(lambda t: f"{t[0]}+{t[1]}"),
)
STATE = st.one_of(st.sampled_from(sorted(JOB_STATES)), st.integers(0, 70000).map(lambda uid: f"CANCELLED by {uid}"))
TIME = st.one_of(
    st.sampled_from(["Unknown", "None", ""]),
    st.datetimes(datetime(2020, 1, 1), datetime(2030, 12, 31)).map(lambda d: d.replace(microsecond=0)),
)
GRES_TYPES = st.dictionaries(st.sampled_from(["h100", "h200", "a100"]), st.integers(0, 64), max_size=2)


@st.composite
def host_lists(draw):
    """Slurm host lists as sacct prints them: names, and names with [1-4,7] ranges, comma-separated."""
    hosts = []
    for _ in range(draw(st.integers(1, 3))):
        prefix = draw(st.from_regex(r"[a-z][a-z0-9\-]{0,10}", fullmatch=True))
        if draw(st.booleans()):
            hosts.append(prefix)
            continue
        low = draw(st.integers(0, 50))
        high = draw(st.integers(low, low + 20))
        hosts.append(f"{prefix}[{low:02d}-{high:02d},{high + 2}]")
    return ",".join(hosts)


NODE_LIST = st.just("") | host_lists()


@st.composite
def jobs(draw):
    times = [draw(TIME), draw(TIME), draw(TIME)]
    # Submit ≤ Start ≤ End where known: a row otherwise is refused (test_a_row_that_cannot_be_is_refused).
    known = iter(sorted(t for t in times if isinstance(t, datetime)))
    submit, start, end = (next(known) if isinstance(t, datetime) else t for t in times)
    nodelist = draw(NODE_LIST)
    return {
        "job_id": draw(JOB_ID),
        "name": draw(NAME),
        "user": draw(FREE_TEXT),
        "account": draw(FREE_TEXT),
        "partition": draw(FREE_TEXT),
        "state": draw(STATE),
        "submit": submit,
        "start": start,
        "end": end,
        "elapsed": draw(st.integers(0, 10**8)),
        "nnodes": draw(st.integers(1 if isinstance(start, datetime) or nodelist else 0, 512)),
        "nodelist": nodelist,
        "untyped": draw(st.none() | st.integers(0, 512)),
        "typed": draw(GRES_TYPES),
    }


def _cell(value):
    return value.strftime("%Y-%m-%dT%H:%M:%S") if isinstance(value, datetime) else str(value)


def _render(job):
    tres = ["cpu=192"]
    if job["untyped"] is not None:
        tres.append(f"gres/gpu={job['untyped']}")
    tres += [f"gres/gpu:{gres_type}={count}" for gres_type, count in job["typed"].items()]
    fields = [
        job[key]
        for key in (
            "job_id",
            "name",
            "user",
            "account",
            "partition",
            "state",
            "submit",
            "start",
            "end",
            "elapsed",
            "nnodes",
            "nodelist",
        )
    ]
    return "|".join(map(_cell, [*fields, ",".join(tres)]))


@settings(max_examples=200, deadline=None)
@given(st.lists(jobs(), max_size=8, unique_by=lambda job: job["job_id"]), st.booleans())
def test_a_generated_table_round_trips(table, with_header):
    text = "".join(line + "\n" for line in ([HEADER] if with_header else []) + [_render(job) for job in table])
    parsed = parse_sacct(text, tz=TOKYO)
    assert [job.job_id for job in parsed] == [job["job_id"] for job in table]
    for job, written in zip(parsed, table, strict=True):
        assert (job.name, job.user, job.account, job.partition) == tuple(
            written[key] for key in ("name", "user", "account", "partition")
        )
        state, _, uid = written["state"].partition(" by ")
        assert (job.state, job.cancelled_by_uid) == (state, int(uid) if uid else None)
        for got, wrote in ((job.submit, written["submit"]), (job.start, written["start"]), (job.end, written["end"])):
            assert got == (wrote.replace(tzinfo=TOKYO) if isinstance(wrote, datetime) else None)
        assert (job.elapsed_seconds, job.node_count) == (written["elapsed"], written["nnodes"])
        untyped, typed = written["untyped"], written["typed"]
        assert job.accelerators == (untyped if untyped is not None else sum(typed.values()))
        assert job.line_number == parsed.index(job) + 1 + with_header
