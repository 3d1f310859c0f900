"""A chart's index gives back exactly the columns it was written from, and is no index at all
when it is of another declaration, cut short or not an index."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from octotrain.chart_series_index import MAGIC, decoded, encoded
from octotrain.metrics_meta import ChartMeta
from octotrain.metrics_series import ChartColumns
from octotrain.run_layout import RunObjects

LOSS = ChartMeta("loss", "step", ["loss", "lr"], [], "training-loss", with_timestamp=True)
VALUES = st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False), st.just("x"))


def index_of(columns: ChartColumns) -> bytes:
    return b"".join(bytes(piece) for piece in encoded(columns))


def same(left: np.ndarray, right: np.ndarray) -> bool:
    return np.array_equal(left, right, equal_nan=True)


@given(st.lists(st.tuples(VALUES, VALUES, VALUES), max_size=50), st.binary(max_size=40))
def test_an_index_holds_what_was_read(rows: list[tuple[object, ...]], torn: bytes) -> None:
    columns = ChartColumns(LOSS)
    text = "".join(
        json.dumps({"step": step, "loss": loss, "lr": lr, "timestamp": 1e9 + n}) + "\n"
        for n, (step, loss, lr) in enumerate(rows)
    )
    columns.feed(text.encode() + torn.replace(b"\n", b""))  # a torn last line is not read
    back = decoded(index_of(columns), LOSS)
    assert back is not None
    assert (back.count, back.skipped, back.consumed) == (
        columns.count, columns.skipped, columns.consumed,
    )  # fmt: skip
    assert back.tail == columns.tail == text.encode()[-128:]
    assert same(back.x, columns.x) and same(back.timestamps, columns.timestamps)
    assert all(same(back.lines[name], columns.lines[name]) for name in LOSS.lines)
    assert not back.x.flags.writeable  # a snapshot's column is never changed in place


def test_an_index_of_another_declaration_or_cut_short_is_none() -> None:
    columns = ChartColumns(LOSS)
    columns.feed(b'{"step": 1, "loss": 0.5, "lr": 0.1}\n{"step": 2, "loss": 0.4, "lr": 0.1}\n')
    data = index_of(columns)
    assert decoded(data, LOSS) is not None
    assert decoded(data, ChartMeta("loss", "epoch", ["loss", "lr"], [], "d")) is None
    assert decoded(data, ChartMeta("loss", "step", ["lr", "loss"], [], "d")) is None
    # the same drawn lines as series of one axis: the same columns, the same index
    assert decoded(data, ChartMeta("loss", "step", ["f1"], ["loss", "lr"], "d")) is not None
    assert decoded(data[:-1], LOSS) is None
    assert decoded(data + b"\0" * 8, LOSS) is None
    assert decoded(b"octotrain-chart-index 2\n" + data[len(MAGIC) :], LOSS) is None
    assert decoded(MAGIC + b'{"x": "step"', LOSS) is None


@pytest.mark.parametrize(
    "header",
    [
        b"[]",
        b'{"x": "step", "lines": ["loss", "lr"], "count": 0, "skipped": 0, "consumed": 0}',
        b'{"x": "step", "lines": ["loss", "lr"], "count": -1, "skipped": 0, "consumed": 0,'
        b' "tail": ""}',
        b'{"x": "step", "lines": ["loss", "lr"], "count": 0, "skipped": 0, "consumed": 0,'
        b' "tail": "not base64!"}',
        # bytes covered, but none to check the file against
        b'{"x": "step", "lines": ["loss", "lr"], "count": 0, "skipped": 0, "consumed": 5,'
        b' "tail": ""}',
    ],
)
def test_a_bad_header_is_no_index(header: bytes) -> None:
    assert decoded(MAGIC + header + b"\n", LOSS) is None


def test_the_index_is_beside_the_metrics_not_among_them() -> None:
    objects = RunObjects(7, "manual__1-abc")
    assert (
        objects.chart_index("single-0", "loss")
        == "runs/7/manual__1-abc/chart-index/single-0/loss.index"
    )
    assert not objects.chart_index("single-0", "loss").startswith(objects.metrics("single-0"))
