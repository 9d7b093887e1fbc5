from datetime import date

from tenants.capacity.sweep import Peak, Span, peak_usage, usage_steps


def d(month: int, day: int) -> date:
    return date(2027, month, day)


def test_empty_pool_has_no_usage():
    assert peak_usage([], starts_on=d(1, 1), ends_on=d(2, 1)) == Peak(0, d(1, 1))


def test_peak_is_the_overlap_and_names_its_first_day():
    spans = [Span(d(1, 1), d(3, 31), 100), Span(d(2, 1), d(4, 30), 27)]
    assert peak_usage(spans, starts_on=d(1, 1), ends_on=d(6, 30)) == Peak(127, d(2, 1))
    assert peak_usage(spans, starts_on=d(4, 1), ends_on=d(6, 30)) == Peak(27, d(4, 1))
    assert peak_usage(spans, starts_on=d(5, 1), ends_on=d(6, 30)) == Peak(0, d(5, 1))


def test_windows_are_inclusive_of_the_last_day():
    spans = [Span(d(1, 1), d(1, 31), 5), Span(d(1, 31), d(2, 28), 5)]
    assert peak_usage(spans, starts_on=d(1, 1), ends_on=d(2, 28)) == Peak(10, d(1, 31))
    assert (
        peak_usage([Span(d(1, 1), d(1, 30), 5), Span(d(1, 31), d(2, 28), 5)], starts_on=d(1, 1), ends_on=d(3, 1)).used
        == 5
    )


def test_usage_steps_stack_by_key():
    spans = [Span(d(1, 1), d(1, 10), 3, "a"), Span(d(1, 5), d(1, 20), 2, "b")]
    steps = usage_steps(spans, starts_on=d(1, 1), ends_on=d(1, 31))
    assert [(s.starts_on, s.ends_on, s.by_key) for s in steps] == [
        (d(1, 1), d(1, 4), {"a": 3}),
        (d(1, 5), d(1, 10), {"a": 3, "b": 2}),
        (d(1, 11), d(1, 20), {"b": 2}),
        (d(1, 21), d(1, 31), {}),
    ]


def test_sweep_matches_a_day_by_day_count():
    import random

    rng = random.Random(7)
    spans = []
    for _ in range(300):
        start = date.fromordinal(d(1, 1).toordinal() + rng.randrange(150))
        end = date.fromordinal(start.toordinal() + rng.randrange(40))
        spans.append(Span(start, end, rng.randrange(1, 9)))
    window = (d(2, 1), d(5, 1))
    brute = max(
        (sum(s.count for s in spans if s.starts_on <= day <= s.ends_on), day)
        for day in (date.fromordinal(o) for o in range(window[0].toordinal(), window[1].toordinal() + 1))
    )
    assert peak_usage(spans, starts_on=window[0], ends_on=window[1]).used == brute[0]
