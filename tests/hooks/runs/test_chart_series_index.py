"""Charts indexed when a node's metrics are collected (from the run folder or from the object
store, local folder and S3): a first read takes the index and parses only what the file holds
past it; a grown file is parsed past the index, a rewritten one again from its start; an index
of another declaration is not used; a store that cannot take the index is logged, not raised."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from hooks.runs.chart_series_index import ChartFile, index_node_charts, refreshed
from hooks.runs.run_files import FolderRunFiles, StoreRunFiles
from hooks.storage.object_store import object_store_from_url, upload_folder
from octotrain.metrics_meta import ChartMeta
from octotrain.metrics_series import TAIL_BYTES, ChartColumns
from octotrain.run_layout import RunLayout, RunObjects
from octotrain.storage import ObjectStore, ObjectStoreUnavailable

OBJECTS = RunObjects(7, "manual__1-abc")
META = {"id": "7", "metas": [
    {"name": "loss", "x": "step", "ys": ["loss"], "description": "l"},
    {"name": "acc", "x": "epoch", "ys": ["acc"], "description": "a"},
]}  # fmt: skip
LOSS = ChartMeta("loss", "step", ["loss"], [], "l")
bytes_read: dict[str, int] = {}  # bytes read of each key of the ``store`` fixture


def lines(start: int, stop: int, *, scale: float = 1.0) -> bytes:
    return "".join(
        json.dumps({"step": n, "loss": scale / (n + 1)}) + "\n" for n in range(start, stop)
    ).encode()


@pytest.fixture(params=["local store", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    """The store, counting in ``bytes_read`` the bytes read of each key."""
    url = (
        request.getfixturevalue("s3_bucket")
        if request.param == "s3"
        else f"file://{tmp_path / 'o'}"
    )
    store = object_store_from_url(url)
    original = store.read_range

    def counted(key: str, start: int, end: int) -> bytes:
        data = original(key, start, end)
        bytes_read[key] = bytes_read.get(key, 0) + len(data)
        return data

    store.read_range = counted  # type: ignore[method-assign]
    bytes_read.clear()
    return store


def layout_of(tmp_path: Path) -> RunLayout:
    return RunLayout(tmp_path / "runs", OBJECTS.task_id, OBJECTS.run_key)


def metrics_folder(tmp_path: Path, loss: bytes) -> Path:
    """Node single-0's METRICS in the run folder."""
    folder = layout_of(tmp_path).node_folders("single-0").metrics
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metrics.json").write_text(json.dumps(META))
    (folder / "loss.jsonl").write_bytes(loss)
    return folder


def data_key(name: str) -> str:
    return f"{OBJECTS.metrics('single-0')}/{name}.jsonl"


def read(store: ObjectStore, *, reindex_bytes: int = 1 << 40) -> ChartColumns:
    """The chart as a process that has read nothing of it yet reads it from the store."""
    file = ChartFile(StoreRunFiles(store, OBJECTS), data_key("loss"))
    key = OBJECTS.chart_index("single-0", "loss")
    return refreshed(
        file, LOSS, store=store, key=key, known=None, reindex_bytes=reindex_bytes
    ).columns


@pytest.mark.parametrize("from_folder", [True, False], ids=["run folder", "object store"])
def test_collected_charts_are_read_from_their_index(
    store: ObjectStore, tmp_path: Path, from_folder: bool
) -> None:
    torn = b'{"step": 5000, "lo'
    folder = metrics_folder(tmp_path, lines(0, 5000) + torn)
    upload_folder(store, folder, OBJECTS.metrics("single-0"))
    files = FolderRunFiles(layout_of(tmp_path)) if from_folder else StoreRunFiles(store, OBJECTS)
    written = index_node_charts(store, files, "single-0")
    assert written == [OBJECTS.chart_index("single-0", "loss")]  # "acc" has no data file
    bytes_read.clear()
    columns = read(store)
    assert columns.count == 5000 and columns.lines["loss"][1] == 0.5
    assert bytes_read == {data_key("loss"): TAIL_BYTES + len(torn)}  # checked, not parsed


def test_a_grown_file_is_parsed_past_its_index_and_a_rewritten_one_again(
    store: ObjectStore, tmp_path: Path
) -> None:
    folder = metrics_folder(tmp_path, lines(0, 5000))
    index_node_charts(store, FolderRunFiles(layout_of(tmp_path)), "single-0")
    (folder / "loss.jsonl").write_bytes(lines(0, 6000))
    upload_folder(store, folder, OBJECTS.metrics("single-0"))
    bytes_read.clear()
    assert read(store).count == 6000
    assert bytes_read[data_key("loss")] == TAIL_BYTES + len(lines(5000, 6000))
    # a node started again and wrote a longer file from the start: other bytes where it stopped
    (folder / "loss.jsonl").write_bytes(lines(0, 7000, scale=2.0))
    upload_folder(store, folder, OBJECTS.metrics("single-0"))
    again = read(store)
    assert again.count == 7000 and again.lines["loss"][0] == 2.0


def test_an_index_of_another_declaration_is_not_used(store: ObjectStore, tmp_path: Path) -> None:
    folder = metrics_folder(tmp_path, lines(0, 100))
    upload_folder(store, folder, OBJECTS.metrics("single-0"))
    index_node_charts(store, StoreRunFiles(store, OBJECTS), "single-0")
    by_loss = ChartMeta("loss", "loss", ["step"], [], "l")  # the meta file was changed since
    file = ChartFile(StoreRunFiles(store, OBJECTS), data_key("loss"))
    key = OBJECTS.chart_index("single-0", "loss")
    columns = refreshed(file, by_loss, store=store, key=key, known=None, reindex_bytes=1).columns
    assert list(columns.x[:2]) == [1.0, 0.5] and list(columns.lines["step"][:2]) == [0.0, 1.0]


def test_the_reader_writes_the_index_after_a_long_parse(store: ObjectStore, tmp_path: Path) -> None:
    upload_folder(store, metrics_folder(tmp_path, lines(0, 3000)), OBJECTS.metrics("single-0"))
    assert read(store, reindex_bytes=len(lines(0, 3000)) + 1).count == 3000  # short: no index
    bytes_read.clear()
    read(store, reindex_bytes=1)  # parsed again, and indexed this time
    assert bytes_read[data_key("loss")] == len(lines(0, 3000))
    bytes_read.clear()
    assert read(store).count == 3000 and data_key("loss") not in bytes_read


def test_a_store_that_cannot_take_the_index_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = object_store_from_url(f"file://{tmp_path / 'o'}")
    metrics_folder(tmp_path, lines(0, 10))

    def refused(key: str, source: Path) -> None:
        raise ObjectStoreUnavailable(f"cannot upload {key}")

    store.put_file = refused  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING):
        assert index_node_charts(store, FolderRunFiles(layout_of(tmp_path)), "single-0") == []
    assert (
        "cannot write the chart index runs/7/manual__1-abc/chart-index/single-0/loss" in caplog.text
    )
