"""Extracting charts from a train log by an algorithm's metric definitions."""

import json
import time
from pathlib import Path
from typing import Any

from agent.log_metrics import MAX_LINE_CHARS, LogMetricsExtractor, LogMetricsFollower
from octotrain.metric_definitions import MetricDefinition
from octotrain.metrics import read_points
from octotrain.metrics_meta import parse_meta


def extractor(folder: Path, *definitions: dict[str, Any]) -> LogMetricsExtractor:
    extraction = [MetricDefinition.model_validate(item).extraction() for item in definitions]
    return LogMetricsExtractor(folder, extraction, task_id="7")


def points(folder: Path, chart: str) -> list[dict[str, float]]:
    found, skipped = read_points(folder / f"{chart}.jsonl")
    assert skipped == 0
    return found


LOSS = {"name": "loss", "regex": r"loss=([0-9.e-]+)"}


def test_an_unmodified_scripts_lines_become_a_chart_with_a_counted_x(tmp_path: Path) -> None:
    extract = extractor(tmp_path, LOSS)
    extract.feed(b"epoch 1 loss=0.5\nnothing here\nepoch 2 loss=2.5e-1\nloss=nan\nloss=-\n")
    extract.finish()
    assert points(tmp_path, "loss") == [{"step": 1, "loss": 0.5}, {"step": 2, "loss": 0.25}]
    meta = parse_meta((tmp_path / "metrics.json").read_bytes())
    assert meta.problems == []
    assert meta.id == "7"
    assert [(chart.name, chart.x, chart.ys) for chart in meta.charts] == [
        ("loss", "step", ["loss"])
    ]


def test_ansi_colours_are_removed_before_matching(tmp_path: Path) -> None:
    extract = extractor(tmp_path, {"name": "loss", "regex": r"^loss=([0-9.]+)$"})
    extract.feed(b"\x1b[32mloss=\x1b[1;33m0.75\x1b[0m\n\x1b]0;title\x07loss=0.5\n")
    extract.finish()
    assert points(tmp_path, "loss") == [{"step": 1, "loss": 0.75}, {"step": 2, "loss": 0.5}]


def test_crlf_and_progress_bar_carriage_returns_end_lines(tmp_path: Path) -> None:
    extract = extractor(tmp_path, {"name": "loss", "regex": r"loss=([0-9.]+)$"})
    extract.feed(b"loss=0.1\r\nloss=0.2\r")  # a chunk may end between \r and \n
    extract.feed(b"\nbar 50% loss=0.3\rbar 100% loss=0.4\r\n")
    extract.finish()
    assert [point["loss"] for point in points(tmp_path, "loss")] == [0.1, 0.2, 0.3, 0.4]


def test_a_line_is_matched_only_once_complete(tmp_path: Path) -> None:
    extract = extractor(tmp_path, {"name": "loss", "regex": r"loss=([0-9.]+)"})
    extract.feed(b"loss=0.1")
    assert points(tmp_path, "loss") == []  # it may still become loss=0.125
    extract.feed(b"25\nloss=0.")
    assert points(tmp_path, "loss") == [{"step": 1, "loss": 0.125}]
    extract.feed(b"5")
    extract.finish()  # the log ended without a newline: its last line is complete
    assert points(tmp_path, "loss") == [{"step": 1, "loss": 0.125}, {"step": 2, "loss": 0.5}]


def test_a_multibyte_character_split_between_reads_is_kept_whole(tmp_path: Path) -> None:
    extract = extractor(tmp_path, {"name": "损失", "regex": r"训练损失[:\uff1a]\s*([0-9.]+)"})
    line = "第3轮 训练损失\uff1a0.5\n".encode()  # a full-width colon
    cut = line.index("失".encode()) + 1  # inside the character's three bytes
    extract.feed(line[:cut])
    extract.feed(line[cut:])
    extract.finish()
    assert points(tmp_path, "损失") == [{"step": 1, "损失": 0.5}]
    meta = json.loads((tmp_path / "metrics.json").read_text(encoding="utf-8"))
    assert meta["metas"][0]["name"] == "损失"
    assert "\\u" not in (tmp_path / "损失.jsonl").read_text(encoding="utf-8")


def test_named_groups_give_x_and_the_series_of_one_chart(tmp_path: Path) -> None:
    extract = extractor(
        tmp_path,
        {
            "name": "准确率",
            "ys": ["acc"],
            "regex": r"epoch (?P<epoch>\d+)(?: train=(?P<train>\S+))?(?: val=(?P<val>\S+))?",
            "x": "epoch",
        },
        LOSS,
    )
    extract.feed(b"epoch 1 train=0.5 val=0.4 loss=0.9\nepoch 2 train=0.7\nepoch 3\n")
    extract.finish()
    assert points(tmp_path, "准确率") == [
        {"epoch": 1, "train": 0.5, "val": 0.4},
        {"epoch": 2, "train": 0.7},  # a series missing from a line is left out of its point
    ]
    assert points(tmp_path, "loss") == [{"step": 1, "loss": 0.9}]
    meta = parse_meta((tmp_path / "metrics.json").read_bytes())
    assert meta.problems == []
    assert meta.chart("准确率") is not None
    assert meta.chart("准确率").series == ["train", "val"]


def test_only_the_start_of_a_huge_line_is_matched(tmp_path: Path) -> None:
    extract = extractor(tmp_path, {"name": "loss", "regex": r"loss=([0-9.]+)"})
    extract.feed(b"x" * MAX_LINE_CHARS + b" loss=0.1")
    extract.feed(b"y" * (10 * MAX_LINE_CHARS) + b"\n")  # kept no bigger than the limit
    extract.feed(b"loss=0.2\n")
    extract.finish()
    assert points(tmp_path, "loss") == [{"step": 1, "loss": 0.2}]


def test_a_million_lines_are_extracted_in_bounded_time(tmp_path: Path) -> None:
    extract = extractor(tmp_path, LOSS, {"name": "acc", "regex": r"acc=(?P<acc>[0-9.]+)"})
    noise = b"2026-12-03 12:00:00 INFO data loader: batch of 256 samples, 0.03 s\n"
    matched = b"2026-12-03 12:00:00 INFO step %d loss=0.%d acc=0.9\n"
    log = b"".join(matched % (n, n) if n % 10 == 0 else noise for n in range(1_000_000))
    started = time.process_time()
    for offset in range(0, len(log), 1 << 20):
        extract.feed(log[offset : offset + (1 << 20)])
    extract.finish()
    seconds = time.process_time() - started
    assert len(points(tmp_path, "loss")) == len(points(tmp_path, "acc")) == 100_000
    # 50,000 lines/s is what a busy training prints; the extraction must keep well ahead
    assert seconds < 1_000_000 / 50_000, f"{seconds:.1f} s of CPU for a million lines"


def test_the_follower_extracts_a_growing_log_and_its_last_line_on_stop(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"loss=0.5\n")
    follower = LogMetricsFollower(log, extractor(tmp_path / "metrics", LOSS), every_seconds=60)
    follower.start()
    with log.open("ab") as handle:
        handle.write(b"loss=0.25\nloss=0.125")
    assert follower.stop() is None
    assert [point["loss"] for point in points(tmp_path / "metrics", "loss")] == [0.5, 0.25, 0.125]


def test_a_follower_reports_an_unreadable_log_instead_of_raising(tmp_path: Path) -> None:
    follower = LogMetricsFollower(tmp_path / "missing.log", extractor(tmp_path, LOSS), 60)
    follower.start()
    assert isinstance(follower.stop(), FileNotFoundError)
