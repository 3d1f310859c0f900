"""The wrapper's part of a node's phases and progress (agent/node_progress.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from node_progress import ProgressSampler, TrainingPhases, read_progress, write_phase

from octotrain.node_progress import Phase, parse_phase, parse_samples

WRAPPER = Path(__file__).resolve().parents[2] / "agent" / "run_training.py"


def declare(metrics: Path, *metas: dict[str, object]) -> None:
    (metrics / "metrics.json").write_text(json.dumps({"id": "1", "metas": list(metas)}))


LOSS = {"name": "loss", "x": "step", "ys": ["loss"], "description": "loss"}


def test_progress_json_is_read(tmp_path: Path) -> None:
    (tmp_path / "progress.json").write_text('{"current": 120, "total": 1000}')
    assert read_progress(tmp_path) == (120.0, 1000.0)
    (tmp_path / "progress.json").write_text('{"current": 3}')
    assert read_progress(tmp_path) == (3.0, None)


def test_a_progress_json_that_says_nothing_usable_is_no_progress(tmp_path: Path) -> None:
    for text in ("", '{"current": 1', "[1]", '{"current": "1"}', '{"current": -1}',
                 '{"current": true}', '{"total": 5}'):  # fmt: skip
        (tmp_path / "progress.json").write_text(text)
        assert read_progress(tmp_path) is None, text
    (tmp_path / "progress.json").write_text('{"current": 5, "total": 0}')
    assert read_progress(tmp_path) == (5.0, None)


def test_without_progress_json_the_declared_charts_last_x_counts(tmp_path: Path) -> None:
    declare(tmp_path, {**LOSS, "name": "lr"}, {**LOSS, "total": 500})
    (tmp_path / "loss.jsonl").write_text('{"step": 10, "loss": 1}\n{"step": 20, "loss": 0.5}\n{"st')
    assert read_progress(tmp_path) == (20.0, 500.0)


def test_progress_json_comes_before_the_chart(tmp_path: Path) -> None:
    declare(tmp_path, {**LOSS, "total": 500})
    (tmp_path / "loss.jsonl").write_text('{"step": 20, "loss": 0.5}\n')
    (tmp_path / "progress.json").write_text('{"current": 7, "total": 70}')
    assert read_progress(tmp_path) == (7.0, 70.0)


def test_no_chart_declares_a_total_or_none_has_points(tmp_path: Path) -> None:
    assert read_progress(tmp_path) is None
    declare(tmp_path, LOSS)
    (tmp_path / "loss.jsonl").write_text('{"step": 20, "loss": 0.5}\n')
    assert read_progress(tmp_path) is None
    declare(tmp_path, {**LOSS, "total": 500})
    (tmp_path / "loss.jsonl").write_text("")
    assert read_progress(tmp_path) is None


def test_the_sampler_appends_only_changes_and_a_last_sample_on_stop(tmp_path: Path) -> None:
    samples = tmp_path / "progress.jsonl"
    sampler = ProgressSampler(tmp_path, samples, every=3600)
    (tmp_path / "progress.json").write_text('{"current": 1, "total": 10}')
    sampler.sample()
    sampler.sample()
    (tmp_path / "progress.json").write_text('{"current": 2, "total": 10}')
    sampler.start()
    sampler.stop()  # the thread waits an hour: only stop's own sample is taken
    rows = parse_samples(samples.read_text())
    assert [(row.current, row.total) for row in rows] == [(1.0, 10.0), (2.0, 10.0)]


def test_phases_of_a_training(tmp_path: Path) -> None:
    phase_file = tmp_path / "node" / "phase.json"
    phases = TrainingPhases(
        phase_file=phase_file, samples=tmp_path / "p.jsonl", metrics=str(tmp_path), every=3600
    )
    assert phases.started() == []
    started = parse_phase(phase_file.read_text())
    assert started is not None and started.phase is Phase.TRAINING
    assert phases.ended() == []
    ended = parse_phase(phase_file.read_text())
    assert ended is not None and ended.phase is Phase.UPLOADING and ended.since >= started.since


def test_a_phase_that_cannot_be_written_is_a_problem_not_a_failure(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    phases = TrainingPhases(phase_file=tmp_path / "file" / "phase.json", samples=None,
                            metrics=None, every=1)  # fmt: skip
    assert phases.started()[0].startswith("phase training not recorded: ")


def test_write_phase_keeps_since(tmp_path: Path) -> None:
    write_phase(tmp_path / "phase.json", "training", since=5.0)
    record = parse_phase((tmp_path / "phase.json").read_text())
    assert record is not None and record.since == 5.0 and record.updated > 5.0
    assert sorted(path.name for path in tmp_path.iterdir()) == ["phase.json"]


def test_the_wrapper_records_phases_and_the_progress_of_its_training(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    code = (
        "import json, os\n"
        "path = os.path.join(os.environ['METRICS'], 'progress.json')\n"
        "open(path, 'w').write(json.dumps({'current': 40, 'total': 40}))\n"
    )
    phase_file, samples = tmp_path / "phase.json", tmp_path / "progress.jsonl"
    done = subprocess.run(
        [
            sys.executable, str(WRAPPER), "--train-log", str(tmp_path / "t.log"),
            "--sidecar-log", str(tmp_path / "s.log"), "--phase-file", str(phase_file),
            "--progress-file", str(samples), "--", sys.executable, "-c", code,
        ],
        env={**os.environ, "METRICS": str(metrics)},
        check=False,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 0
    record = parse_phase(phase_file.read_text())
    assert record is not None and record.phase is Phase.UPLOADING
    assert [(row.current, row.total) for row in parse_samples(samples.read_text())] == [
        (40.0, 40.0)
    ]
