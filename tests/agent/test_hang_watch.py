"""Hang detection (``agent/hang_watch.py``): the detector with a clock the test moves, then the
wrapper that runs it beside a training that goes silent."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.hang_watch import (
    HUNG_EXIT_STATUS,
    HangDetector,
    HangEvent,
    ProgressMark,
    progress_mark,
)
from octotrain import exit_codes

WRAPPER = Path(__file__).resolve().parents[2] / "agent" / "run_training.py"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def mark(log_size: int, *metrics: tuple[str, int]) -> ProgressMark:
    return log_size, tuple(metrics)


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_a_training_that_keeps_writing_is_never_hung(clock: Clock) -> None:
    detector = HangDetector(hang_after_seconds=60, clock=clock)
    for size in range(1, 20):
        clock.now += 59
        assert detector.observe(mark(size)) is None


def test_silence_for_the_threshold_is_a_hang_reported_once(clock: Clock) -> None:
    detector = HangDetector(hang_after_seconds=60, clock=clock)
    assert detector.observe(mark(10)) is None
    clock.now += 59.9
    assert detector.observe(mark(10)) is None
    clock.now += 0.1
    assert detector.observe(mark(10)) == HangEvent("hung", 60)
    clock.now += 600
    assert detector.observe(mark(10)) is None


def test_a_hung_training_that_writes_again_is_advancing_and_may_hang_again(clock: Clock) -> None:
    detector = HangDetector(hang_after_seconds=60, clock=clock)
    detector.observe(mark(10))
    clock.now += 90
    assert detector.observe(mark(10)) == HangEvent("hung", 90)
    clock.now += 30
    assert detector.observe(mark(11)) == HangEvent("advancing", 120)
    clock.now += 59
    assert detector.observe(mark(11)) is None
    clock.now += 1
    assert detector.observe(mark(11)) == HangEvent("hung", 60)


def test_a_metrics_point_is_progress_though_the_log_is_silent(clock: Clock) -> None:
    detector = HangDetector(hang_after_seconds=60, clock=clock)
    detector.observe(mark(10, ("loss.jsonl", 100)))
    clock.now += 50
    assert detector.observe(mark(10, ("loss.jsonl", 140))) is None
    clock.now += 50
    assert detector.observe(mark(10, ("acc.jsonl", 20), ("loss.jsonl", 140))) is None
    clock.now += 59
    assert detector.observe(mark(10, ("acc.jsonl", 20), ("loss.jsonl", 140))) is None


def test_the_silence_counts_from_the_start_when_nothing_was_ever_written(clock: Clock) -> None:
    detector = HangDetector(hang_after_seconds=5, clock=clock)
    clock.now += 5
    assert detector.observe(mark(0)) is None  # the first mark seen: silence starts now
    clock.now += 5
    assert detector.observe(mark(0)) == HangEvent("hung", 5)


def test_the_threshold_must_be_positive(clock: Clock) -> None:
    with pytest.raises(ValueError, match="hang_after_seconds must be above 0; got 0"):
        HangDetector(hang_after_seconds=0, clock=clock)


def test_the_progress_mark_is_the_log_size_and_each_metrics_file_size(tmp_path: Path) -> None:
    log, metrics = tmp_path / "train.log", tmp_path / "metrics"
    assert progress_mark(log, metrics) == (0, ())
    log.write_text("epoch 1\n")
    metrics.mkdir()
    (metrics / "loss.jsonl").write_text('{"step": 1, "loss": 0.5}\n')
    (metrics / "nested").mkdir()
    assert progress_mark(log, metrics) == (8, (("loss.jsonl", 25),))
    (metrics / "nested" / "points.jsonl").write_text("{}\n")
    assert progress_mark(log, metrics) == (8, (("loss.jsonl", 25), ("nested/points.jsonl", 3)))
    os.utime(log, (0, 0))  # touched, not written: no progress
    assert progress_mark(log, None) == (8, ())


def test_the_agent_and_the_launchers_agree_on_the_hung_exit_status() -> None:
    assert HUNG_EXIT_STATUS == exit_codes.HUNG_EXIT_STATUS


SILENT = "import time\nprint('epoch 0', flush=True)\ntime.sleep(60)\n"
SAVES_ON_SIGTERM = (
    "import signal, sys, time\n"
    "def save(*_):\n"
    "    print('saving a checkpoint', flush=True); sys.exit(0)\n"
    "signal.signal(signal.SIGTERM, save)\n"
    "print('epoch 0', flush=True); time.sleep(60)\n"
)


def run_wrapper(tmp_path: Path, *options: str, code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable, str(WRAPPER), "--train-log", str(tmp_path / "t.log"),
            "--sidecar-log", str(tmp_path / "s.log"), "--exit-file", str(tmp_path / "exit.json"),
            "--hang-report", str(tmp_path / "hang.json"), "--stop-grace-seconds", "30",
            *options, "--", sys.executable, "-c", code,
        ],
        start_new_session=True,
    )  # fmt: skip


def await_file(path: Path, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def test_the_wrapper_reports_a_silent_training_and_lets_it_run(tmp_path: Path) -> None:
    process = run_wrapper(tmp_path, "--hang-after-seconds", "0.5", code=SILENT)
    try:
        await_file(tmp_path / "hang.json")
        report = json.loads((tmp_path / "hang.json").read_text())
        assert report["hang_after_seconds"] == 0.5 and report["silent_seconds"] >= 0.5
        assert process.poll() is None  # reported, not stopped
        sidecar = (tmp_path / "s.log").read_text()
        assert "the training looks hung: its process is alive but its log and METRICS have " in (
            sidecar
        )
        assert "(hang_detection.after_seconds: 0.5)" in sidecar
    finally:
        os.killpg(process.pid, 15)
        process.wait(timeout=20)


def test_a_hung_training_is_stopped_with_the_grace_to_save_and_exits_as_hung(
    tmp_path: Path,
) -> None:
    """As at a time limit: SIGTERM, time to save a checkpoint, and a failed node (status 122,
    ``hung`` in the exit file) even though the training, stopped, exited 0."""
    process = run_wrapper(
        tmp_path, "--hang-after-seconds", "0.5", "--stop-when-hung", code=SAVES_ON_SIGTERM
    )
    assert process.wait(timeout=30) == HUNG_EXIT_STATUS
    assert "saving a checkpoint" in (tmp_path / "t.log").read_text()
    report = json.loads((tmp_path / "exit.json").read_text())
    assert report["exit_status"] == 0
    assert report["hung"]["hang_after_seconds"] == 0.5
    assert report["hung"]["silent_seconds"] >= 0.5
    assert "stopping the hung training (stop_when_hung)" in (tmp_path / "s.log").read_text()


def test_a_training_that_keeps_writing_is_not_stopped(tmp_path: Path) -> None:
    writes = "import time\nfor step in range(15):\n    print(step, flush=True); time.sleep(0.1)\n"
    process = run_wrapper(tmp_path, "--hang-after-seconds", "1", "--stop-when-hung", code=writes)
    assert process.wait(timeout=30) == 0
    assert json.loads((tmp_path / "exit.json").read_text()) == {"exit_status": 0}
    assert not (tmp_path / "hang.json").exists()
