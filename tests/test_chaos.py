"""The chaos run's pieces (scripts/chaos.py): the AWS proxy's three modes over real sockets, the fault schedule's
bounds, and how the run reads its samples. The whole run takes minutes (`make chaos`), so it is not run here."""

import contextlib
import importlib.util
import random
import socket
import socketserver
import sys
import threading
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "chaos.py"
spec = importlib.util.spec_from_file_location("chaos", SCRIPT)
chaos = importlib.util.module_from_spec(spec)
sys.modules["chaos"] = chaos  # dataclasses look their module up by name
spec.loader.exec_module(chaos)


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while data := self.request.recv(4096):
            self.request.sendall(data)


@pytest.fixture
def proxy():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    proxy = chaos.Proxy(server.server_address[1]).start()
    yield proxy
    proxy.stop()
    server.shutdown()
    server.server_close()


def connect(proxy) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
    s.settimeout(5)
    return s


def test_pass_carries_bytes_both_ways(proxy):
    with connect(proxy) as s:
        s.sendall(b"describe-cluster")
        assert s.recv(100) == b"describe-cluster"


def test_blackhole_accepts_and_never_answers_then_lets_the_held_bytes_through(proxy):
    with connect(proxy) as open_before:
        open_before.sendall(b"first")
        assert open_before.recv(100) == b"first"
        proxy.set_mode("blackhole")
        with connect(proxy) as during:  # accepted: the handshake completes
            during.settimeout(0.5)
            during.sendall(b"new")
            with pytest.raises(TimeoutError):
                during.recv(100)
            open_before.settimeout(0.5)
            open_before.sendall(b"held")
            with pytest.raises(TimeoutError):
                open_before.recv(100)
            proxy.set_mode("pass")
            during.settimeout(5)
            open_before.settimeout(5)
            assert during.recv(100) == b"new"
            assert open_before.recv(100) == b"held"


def test_refuse_closes_the_listener_and_cuts_open_connections_then_pass_listens_again(proxy):
    with connect(proxy) as open_before:
        open_before.sendall(b"x")
        assert open_before.recv(10) == b"x"
        proxy.set_mode("refuse")
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        with contextlib.suppress(ConnectionResetError):  # cut with a reset: as good as a close
            assert open_before.recv(10) == b""
    proxy.set_mode("pass")
    with connect(proxy) as after:
        after.sendall(b"again")
        assert after.recv(100) == b"again"


def test_unknown_mode_is_refused(proxy):
    with pytest.raises(ValueError):
        proxy.set_mode("slow")


@pytest.mark.parametrize("seed", range(40))
def test_schedule_is_bounded_ordered_and_inside_the_window(seed):
    rng = random.Random(seed)
    count, window = rng.randint(0, 25), rng.uniform(0, 1800)
    faults = chaos.schedule_faults(random.Random(seed), count=count, window=window)
    assert len(faults) <= count
    for fault in faults:
        low, high = chaos.FAULT_KINDS[fault.kind]
        assert low <= fault.seconds <= high
        assert fault.at >= 30
        assert fault.ends <= window + 0.1  # rounded to a tenth of a second
    for before, after in zip(faults, faults[1:], strict=False):
        assert after.at >= before.ends + chaos.FAULT_GAP_SECONDS - 0.1


def test_same_seed_same_schedule_and_every_kind_in_a_long_run():
    first = chaos.schedule_faults(random.Random(7), count=14, window=1800)
    assert first == chaos.schedule_faults(random.Random(7), count=14, window=1800)
    assert len(first) == 14
    assert {f.kind for f in first} == set(chaos.FAULT_KINDS)


def test_a_window_too_short_gets_fewer_faults_not_overlapping_ones():
    faults = chaos.schedule_faults(random.Random(1), count=10, window=120)
    assert 0 < len(faults) < 10
    assert faults[-1].ends <= 120


def test_no_faults_before_the_warmup_ends():
    assert chaos.schedule_faults(random.Random(1), count=3, window=20) == []


class Samples:
    """A Run reduced to what settled_after reads."""

    def __init__(self, samples):
        self.watch = type("Watch", (), {"samples": samples})()

    settled_after = chaos.Run.settled_after


def test_settled_after_is_measured_to_the_last_late_sample():
    # (time, late clusters or None when the database did not answer, clusters in flight)
    run = Samples([(100, 1, 3), (110, None, 0), (120, 1, 1), (130, 0, 1), (140, 0, 0), (150, 0, 0)])
    assert run.settled_after(100, load_ended=125) == 30  # in flight after the load ended counts as late


def test_not_settled_when_the_last_sample_still_sees_a_late_cluster():
    run = Samples([(100, 0, 0), (110, 2, 2)])
    assert run.settled_after(90, load_ended=95) is None


def test_a_5xx_cause_is_an_html_page_title_or_the_text_in_one_line():
    assert chaos.cause("<html><head><title>Server error</title></head><body>…</body></html>") == "Server error"
    assert chaos.cause('{"detail":\n  "Database unavailable"}') == '{"detail": "Database unavailable"}'
    assert chaos.cause("") == "(empty body)"


def test_the_web_log_names_the_last_exception_of_each_chain(tmp_path):
    log = tmp_path / "web.log"
    log.write_text(
        "ERROR django.request: Internal Server Error: /api/v1/clusters/\n"
        "Traceback (most recent call last):\n"
        '  File "x.py", line 1, in f\n'
        "psycopg.OperationalError: connection failed\n"
        "\n"
        "The above exception was the direct cause of the following exception:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "y.py", line 2, in g\n'
        "django.db.utils.OperationalError: connection failed\n"
        'INFO "GET /api/v1/clusters/ HTTP/1.1" 500\n'
    )
    assert chaos.web_log_exceptions(log) == {"django.db.utils.OperationalError: connection failed": 1}


def test_longest_in_flight_follows_each_cluster_and_counts_an_open_episode_to_now():
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2026, 11, 25, 16, 0, tzinfo=UTC)

    def at(seconds):
        return t0 + timedelta(seconds=seconds)

    events = [
        (1, "requested", at(0)),
        (1, "provisioning", at(1)),  # still the same episode: requested then provisioning
        (2, "requested", at(5)),
        (2, "provisioning", at(6)),
        (1, "in_service", at(377)),
        (2, "in_service", at(8)),
        (2, "deleting", at(100)),
        (2, "deleted", at(160)),
        (3, "requested", at(300)),  # never left: counted until now
    ]
    assert chaos.longest_in_flight(events, now=at(400)) == (377.0, 1)
    assert chaos.longest_in_flight(events, now=at(800)) == (500.0, 3)
    assert chaos.longest_in_flight([], now=at(0)) == (0.0, None)


def test_the_provisioning_goal_reads_provisioning_only_and_deletion_apart():
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2026, 11, 25, 16, 0, tzinfo=UTC)
    events = [
        (1, "requested", t0),
        (1, "in_service", t0 + timedelta(seconds=40)),
        (1, "deleting", t0 + timedelta(seconds=50)),  # an AWS outage holds the deletion for 190 s
        (1, "deleted", t0 + timedelta(seconds=240)),
    ]
    now = t0 + timedelta(seconds=300)
    assert chaos.longest_in_flight(events, now=now, statuses=chaos.PROVISIONING) == (40.0, 1)
    assert chaos.longest_in_flight(events, now=now, statuses=("deleting",)) == (190.0, 1)


# --- What deep health said during each fault --------------------------------------------------------------------

OK, BROKER, BEAT = (200, []), (503, ["broker: down: OperationalError"]), (503, ["beat: stopped: not running for 9 s"])


def answers(*samples):
    """(time, (status, problems)) → the Watch's (time, status, problems)."""
    return [(when, status, problems) for when, (status, problems) in samples]


def test_a_fault_is_named_from_its_start_and_cleared_from_its_end():
    health = answers((98, OK), (102, OK), (106, BROKER), (110, BROKER), (130, BROKER), (134, OK), (138, OK))
    assert chaos.named_and_cleared(health, "stop-redis", 100, 130) == (6, 4)
    assert chaos.named_and_cleared(health, "kill-beat", 100, 130) == (None, None)  # never said "beat:"
    assert chaos.named_and_cleared(health, "restart-postgres", 100, 100) == (None, None)  # not judged


def test_a_fault_still_named_at_the_end_of_the_samples_was_never_cleared():
    health = answers((100, OK), (103, BEAT), (140, BEAT))
    assert chaos.named_and_cleared(health, "kill-beat", 100, 101) == (3, None)


def test_alarms_count_only_outside_every_fault_and_its_clearing_time():
    health = answers((50, BROKER), (105, BROKER), (140, BEAT), (146, BEAT), (200, OK))
    alarms = chaos.false_alarms(health, [(100, 130)])
    assert [when for when, *_ in alarms] == [50, 146]  # 105 in the fault; 140 within 15 s of its end


def test_the_api_answers_during_an_outage_skip_those_under_way_when_it_began():
    during = chaos.answers_during([(99, 200), (101, 200), (105, 503), (120, 503), (131, 0)], [(100, 130)])
    assert during == {503: 2}
