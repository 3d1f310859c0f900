"""Chart data read as it grows (torn and bad lines skipped and counted) and cut down to a
chart's worth of points without losing a peak."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from octotrain.metrics_meta import ChartMeta
from octotrain.metrics_series import TAIL_BYTES, ChartColumns, peak_preserving_indices

LOSS = ChartMeta("loss", "step", ["loss", "lr"], [], "training loss")


def test_points_are_read_incrementally_and_bad_lines_counted() -> None:
    columns = ChartColumns(LOSS)
    columns.feed(b'{"step": 1, "loss": 0.5, "lr": 0.1}\n{"step": 2, "loss": 0.4}\n{"step": 3, "lo')
    assert list(columns.x) == [1.0, 2.0] and list(columns.lines["loss"]) == [0.5, 0.4]
    assert np.isnan(columns.lines["lr"][1]) and columns.skipped == 0
    rest = b'{"step": 3, "loss": 0.3, "lr": 0.1, "timestamp": 1700000000}\n'
    columns.feed(rest)  # the caller goes on from ``consumed``: the torn line comes again whole
    assert list(columns.x) == [1.0, 2.0, 3.0] and columns.timestamps[-1] == 1700000000
    columns.feed(
        b'not json\n[1, 2]\n{"step": "four", "loss": 1}\n{"step": 5, "loss": "NaN"}\n'
        b'{"step": 6, "loss": true}\n{"step": 7}\n{"step": 8, "loss": 1e999}\n'
        b'{"step": 9, "loss": 0.2},{"step": 10, "loss": 0.1}\n\n{"step": 11, "loss": 0.1}\n'
    )
    assert list(columns.x) == [1.0, 2.0, 3.0, 11.0]
    assert columns.skipped == 8


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=5000), st.integers(4, 300))
def test_downsampling_keeps_ends_and_extremes(values: list[float], points: int) -> None:
    line = np.array(values)
    kept = peak_preserving_indices([line], points)
    assert len(kept) <= max(points + 2, len(values) if len(values) <= points else 0)
    assert kept[0] == 0 and kept[-1] == len(values) - 1
    assert line[kept].min() == line.min() and line[kept].max() == line.max()
    assert list(kept) == sorted(set(kept))


def test_a_million_points_become_about_two_thousand() -> None:
    rng = np.random.default_rng(3)
    loss = rng.normal(size=1_000_000).cumsum()
    spiky = rng.normal(size=1_000_000)
    spiky[123_457] = 99.0
    kept = peak_preserving_indices([loss, spiky], 2000)
    assert 1000 < len(kept) <= 4002
    assert 123_457 in kept and int(np.argmin(loss)) in kept and int(np.argmax(loss)) in kept
    with_gaps = np.full(10_000, np.nan)
    with_gaps[5000] = 1.0
    assert list(peak_preserving_indices([with_gaps], 100)) == [0, 5000, 9999]


def test_series_charts_draw_their_series() -> None:
    chart = ChartMeta("f1", "epoch", ["f1"], ["cat", "dog"], "per class")
    columns = ChartColumns(chart)
    columns.feed((json.dumps({"epoch": 1, "cat": 0.5, "dog": 0.7}) + "\n").encode())
    assert {name: list(values) for name, values in columns.lines.items()} == {
        "cat": [0.5], "dog": [0.7],
    }  # fmt: skip


def test_a_file_parsed_in_pieces_reads_as_one(monkeypatch: pytest.MonkeyPatch) -> None:
    text = b"".join(
        json.dumps({"step": n, "loss": 1 / (n + 1), "lr": 0.1}).encode() + b"\n" for n in range(500)
    )
    whole = ChartColumns(LOSS)
    whole.feed(text + b'{"step": 500, "lo')
    monkeypatch.setattr("octotrain.metrics_series.PARSE_BYTES", 100)  # a line or two a piece
    pieces = ChartColumns(LOSS)
    pieces.feed(text[:7000])
    pieces.feed(text[pieces.consumed :] + b'{"step": 500, "lo')
    assert pieces.count == whole.count == 500 and pieces.consumed == whole.consumed == len(text)
    assert list(pieces.x) == list(whole.x) and list(pieces.lines["loss"]) == list(
        whole.lines["loss"]
    )
    assert pieces.tail == whole.tail == text[-TAIL_BYTES:]


def test_a_snapshot_stays_as_it_was_while_the_columns_grow() -> None:
    columns = ChartColumns(LOSS)
    columns.feed(b'{"step": 1, "loss": 0.5, "lr": 0.1}\n')
    snapshot = replace(columns)
    view = snapshot.lines["loss"]
    columns.feed(b'{"step": 2, "loss": 0.4, "lr": 0.1}\n')
    assert snapshot.count == 1 and list(view) == [0.5] and list(columns.lines["loss"]) == [0.5, 0.4]
    with pytest.raises(ValueError, match="read-only"):
        columns.x[0] = 9.0
