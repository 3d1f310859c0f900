"""Phases, progress samples and the honest estimate (octotrain/node_progress.py)."""

from __future__ import annotations

import json

import pytest

from octotrain.node_progress import (
    MIN_POINTS,
    STALE_SECONDS,
    WINDOW_SECONDS,
    NodeProgress,
    Phase,
    PhaseRecord,
    ProgressSample,
    node_progress,
    parse_phase,
    parse_samples,
    run_progress,
    since_last_drop,
    staging_eta,
    training_eta,
    wrapper_arguments,
)


def steady(count: int, *, every: float = 2.0, step: float = 10.0, total: float | None = 1000.0,
           start: float = 1000.0, first: float = 0.0) -> list[ProgressSample]:  # fmt: skip
    """``count`` samples ``every`` seconds, ``step`` apart."""
    return [
        ProgressSample(start + index * every, first + index * step, total) for index in range(count)
    ]


def test_no_estimate_until_enough_points() -> None:
    samples = steady(MIN_POINTS)
    for shown in range(MIN_POINTS):
        assert training_eta(samples[:shown], now=samples[-1].time) is None


def test_no_estimate_while_the_points_span_too_little_time() -> None:
    samples = steady(MIN_POINTS + 2, every=0.5)
    assert training_eta(samples, now=samples[-1].time) is None


def test_steady_progress_gives_the_time_left() -> None:
    samples = steady(10)  # 5 a second, at 90 of 1000
    assert training_eta(samples, now=samples[-1].time) == pytest.approx((1000 - 90) / 5)


def test_the_estimate_counts_down_between_samples_and_never_goes_negative() -> None:
    samples = steady(10)
    last = samples[-1].time
    assert training_eta(samples, now=last + 10) == pytest.approx(910 / 5 - 10)
    assert training_eta(samples, now=last + 250) == 0.0


def test_no_estimate_once_progress_has_stalled() -> None:
    samples = steady(10)
    assert training_eta(samples, now=samples[-1].time + STALE_SECONDS + 1) is None


def test_no_estimate_without_a_total() -> None:
    samples = steady(10, total=None)
    assert training_eta(samples, now=samples[-1].time) is None


def test_a_finished_training_has_nothing_left() -> None:
    samples = [*steady(3), ProgressSample(1010.0, 1000.0, 1000.0)]
    assert training_eta(samples, now=5000.0) == 0.0


def test_no_estimate_when_progress_does_not_move() -> None:
    samples = steady(10, step=0.0)
    assert training_eta(samples, now=samples[-1].time) is None


def test_the_rate_is_smoothed_over_the_window() -> None:
    """One slow step among steady ones moves the estimate a little, not to the slow rate."""
    samples = steady(30)
    slow = ProgressSample(samples[-1].time + 20, samples[-1].current + 10, 1000.0)
    estimate = training_eta([*samples, slow], now=slow.time)
    assert estimate is not None
    only_slow_rate = (1000 - slow.current) / (10 / 20)
    assert (1000 - slow.current) / 5 < estimate < only_slow_rate / 2


def test_only_the_window_counts_once_the_rate_changed() -> None:
    """0.5 a second for 200 s, then 5 a second for longer than the window: the estimate is
    the recent rate's."""
    old = steady(100, step=1.0, total=10_000.0)
    recent = steady(100, step=10.0, total=10_000.0, start=old[-1].time + 2,
                    first=old[-1].current + 10)  # fmt: skip
    assert recent[-1].time - recent[0].time > WINDOW_SECONDS
    estimate = training_eta([*old, *recent], now=recent[-1].time)
    assert estimate == pytest.approx((10_000 - recent[-1].current) / 5)


def test_progress_going_backwards_restarts_the_estimate() -> None:
    """A node started again from an earlier checkpoint: the samples before the drop say
    nothing; with fewer than enough after it there is no estimate."""
    before = steady(10, first=500.0)
    after = steady(2, start=before[-1].time + 30, first=200.0)
    assert since_last_drop([*before, *after]) == after
    assert training_eta([*before, *after], now=after[-1].time) is None
    more = steady(5, start=before[-1].time + 30, first=200.0, step=4.0)
    assert training_eta([*before, *more], now=more[-1].time) == pytest.approx((1000 - 216) / 2)


def test_samples_are_read_skipping_torn_and_broken_lines() -> None:
    text = "\n".join(
        [
            json.dumps({"time": 1.0, "current": 1, "total": 10}),
            "not json",
            json.dumps([1, 2]),
            json.dumps({"time": 2.0, "current": "x"}),
            json.dumps({"time": 3.0, "current": 3, "total": None}),
            json.dumps({"time": 4.0, "current": 4, "total": 0}),
            '{"time": 5.0, "curr',
        ]
    )
    assert parse_samples(text.encode()) == [
        ProgressSample(1.0, 1.0, 10.0),
        ProgressSample(3.0, 3.0, None),
        ProgressSample(4.0, 4.0, None),
    ]


def test_a_phase_file_round_trips_and_a_bad_one_reads_as_none() -> None:
    record = PhaseRecord(Phase.STAGING, 10.0, 12.0, 512, 2048)
    assert parse_phase(json.dumps(record.document())) == record
    waiting = PhaseRecord(Phase.WAITING, 10.0, 10.0)
    assert "bytes_total" not in waiting.document()
    assert parse_phase(json.dumps(waiting.document())) == waiting
    for bad in (None, "", "{", '{"phase": "sleeping", "since": 1}', '{"phase": "done"}', "[]"):
        assert parse_phase(bad) is None


def test_staging_estimate_from_its_average_rate() -> None:
    assert staging_eta(PhaseRecord(Phase.STAGING, 0.0, 10.0, 250, 1000)) == pytest.approx(30.0)
    assert staging_eta(PhaseRecord(Phase.STAGING, 0.0, 1.0, 250, 1000)) is None  # too early
    assert staging_eta(PhaseRecord(Phase.STAGING, 0.0, 10.0, 0, 1000)) is None  # no byte yet
    assert staging_eta(PhaseRecord(Phase.STAGING, 0.0, 10.0)) is None  # total unknown
    assert staging_eta(PhaseRecord(Phase.STAGING, 0.0, 10.0, 1200, 1000)) == 0.0


def test_a_node_without_a_phase_file_is_waiting_and_one_of_an_ended_run_done() -> None:
    shown = node_progress("single-0", None, [], run_active=True, now=0.0)
    assert shown == NodeProgress("single-0", Phase.WAITING)
    training = PhaseRecord(Phase.TRAINING, 5.0, 5.0)
    ended = node_progress("single-0", training, steady(3), run_active=False, now=0.0)
    assert (ended.phase, ended.eta_seconds, ended.since) == (Phase.DONE, None, None)
    assert ended.percent == pytest.approx(2.0)


def test_a_staging_node_shows_its_bytes() -> None:
    record = PhaseRecord(Phase.STAGING, 0.0, 10.0, 256, 1024)
    shown = node_progress("single-0", record, [], run_active=True, now=10.0)
    assert (shown.percent, shown.eta_seconds) == (25.0, pytest.approx(30.0))
    assert (shown.bytes_done, shown.bytes_total, shown.since) == (256, 1024, 0.0)


def test_a_training_node_with_an_unknown_total_shows_where_it_is_only() -> None:
    record = PhaseRecord(Phase.TRAINING, 900.0, 900.0)
    shown = node_progress("single-0", record, steady(10, total=None), run_active=True, now=1018)
    assert (shown.current, shown.total, shown.percent, shown.eta_seconds) == (90, None, None, None)


def test_a_training_node_shows_percent_and_estimate() -> None:
    record = PhaseRecord(Phase.TRAINING, 900.0, 900.0)
    shown = node_progress("single-0", record, steady(10), run_active=True, now=1018.0)
    assert shown.percent == pytest.approx(9.0)
    assert shown.eta_seconds == pytest.approx(910 / 5)


def node(name: str, phase: Phase, percent: float | None, eta: float | None) -> NodeProgress:
    return NodeProgress(name, phase, 0.0, percent, eta)


def test_a_run_is_as_far_as_its_slowest_node() -> None:
    run = run_progress(
        [
            node("distributed-0", Phase.TRAINING, 60.0, 100.0),
            node("distributed-1", Phase.TRAINING, 40.0, 300.0),
            node("distributed-2", Phase.TRAINING, 50.0, 200.0),
        ],
        run_active=True,
    )
    assert (run.phase, run.percent, run.eta_seconds) == (Phase.TRAINING, 40.0, 300.0)


def test_a_run_has_no_estimate_while_one_node_has_none() -> None:
    run = run_progress(
        [node("distributed-0", Phase.TRAINING, 60.0, 100.0),
         node("distributed-1", Phase.TRAINING, None, None)],
        run_active=True,
    )  # fmt: skip
    assert (run.percent, run.eta_seconds) == (None, None)


def test_a_run_is_in_the_phase_of_its_least_advanced_node() -> None:
    run = run_progress(
        [node("distributed-0", Phase.TRAINING, 60.0, 100.0),
         node("distributed-1", Phase.STAGING, 30.0, 20.0)],
        run_active=True,
    )  # fmt: skip
    assert (run.phase, run.percent, run.eta_seconds) == (Phase.STAGING, 30.0, 20.0)
    waiting = run_progress([node("single-0", Phase.WAITING, None, None)], run_active=True)
    assert (waiting.phase, waiting.eta_seconds) == (Phase.WAITING, None)


def test_a_run_without_nodes_is_waiting_or_done() -> None:
    assert run_progress([], run_active=True).phase is Phase.WAITING
    assert run_progress([], run_active=False).phase is Phase.DONE


def test_the_wrapper_is_told_both_files() -> None:
    assert wrapper_arguments(phase_file="p", progress_file="q") == [
        "--phase-file", "p", "--progress-file", "q",
    ]  # fmt: skip
