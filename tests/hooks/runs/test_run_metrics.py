"""A run's metrics and resource samples where they are (run folder, local store, S3), chart data
read incrementally as the sidecar replaces the object with a longer one; a long parse leaves an
index for the next process; a chart being read does not hold up the others."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from hooks.runs.run_files import folder_then_store
from hooks.runs.run_metrics import RunMetrics, forget_charts
from hooks.storage.object_store import object_store_from_url, upload_folder
from octotrain.errors import NotFound
from octotrain.metrics_series import TAIL_BYTES
from octotrain.run_layout import RunLayout

META = {"id": "7", "metas": [{"name": "loss", "x": "step", "ys": ["loss"], "description": "l"}]}


def lines(start: int, stop: int) -> str:
    return "".join(json.dumps({"step": n, "loss": 1 / (n + 1)}) + "\n" for n in range(start, stop))


@pytest.mark.parametrize("where", ["run folder", "local store", "s3"])
def test_charts_resources_and_incremental_reads(
    where: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    layout = RunLayout(tmp_path / f"runs-{where}", 7, "manual__1-abc")
    url = request.getfixturevalue("s3_bucket") if where == "s3" else f"file://{tmp_path / 'o'}"
    store = object_store_from_url(url)
    reads: list[int] = []
    original = store.read_range

    def counted(key: str, start: int, end: int) -> bytes:
        reads.append(end - start)
        return original(key, start, end)

    store.read_range = counted  # type: ignore[method-assign]

    def put(relative: str, text: str) -> None:
        if where == "run folder":
            target = layout.node_folders("single-0").metrics / relative.removeprefix("metrics/")
            if relative.startswith("resources"):
                target = layout.resources_path("single-0")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            return
        source = tmp_path / "upload"
        source.write_text(text)
        name = relative.removeprefix("metrics/")
        key = (layout.objects.resources("single-0")
               if relative.startswith("resources")
               else f"{layout.objects.metrics('single-0')}/{name}")  # fmt: skip
        store.put_file(key, source)

    files = folder_then_store(layout, store, live=where == "run folder")
    metrics = RunMetrics(files, store, ["single-0"])
    assert metrics.meta("single-0") is None
    put("metrics/metrics.json", json.dumps(META))
    put("metrics/loss.jsonl", lines(0, 1000))
    put(
        "resources.jsonl",
        json.dumps({"timestamp": 1, "cpu_percent": 5, "memory_percent": 1}) + "\n",
    )
    assert [chart.name for chart in metrics.meta("single-0").charts] == ["loss"]  # type: ignore[union-attr]
    assert metrics.chart("single-0", "loss").count == 1000
    reads.clear()
    put("metrics/loss.jsonl", lines(0, 1500))  # the sidecar uploads the grown file
    assert metrics.chart("single-0", "loss").count == 1500
    if where != "run folder":
        meta_read, data_read = reads[0], reads[-1]
        # only what is new, and the bytes before it that say the file was appended to
        assert data_read == TAIL_BYTES + len(lines(1000, 1500)) and meta_read < 200
    put("metrics/loss.jsonl", lines(0, 10))  # rewritten from the start: read again
    assert metrics.chart("single-0", "loss").count == 10
    assert metrics.resources("single-0").columns["cpu_percent"] == [5.0]
    with pytest.raises(NotFound, match="no node 'distributed-3'"):
        metrics.meta("distributed-3")
    with pytest.raises(NotFound, match="no valid chart 'acc'"):
        metrics.chart("single-0", "acc")


def test_a_long_parse_leaves_an_index_for_the_next_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = RunLayout(tmp_path / "runs", 7, "manual__1-abc")
    store = object_store_from_url(f"file://{tmp_path / 'o'}")
    folder = layout.node_folders("single-0").metrics
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps(META))
    (folder / "loss.jsonl").write_text(lines(0, 1000))
    metrics = RunMetrics(folder_then_store(layout, store, live=True), store, ["single-0"])
    key = layout.objects.chart_index("single-0", "loss")
    monkeypatch.setattr("hooks.runs.run_metrics.REINDEX_BYTES", len(lines(0, 1000)) + 1)
    assert metrics.chart("single-0", "loss").count == 1000
    assert not store.list(key)  # a short parse: no index
    with (folder / "loss.jsonl").open("a") as out:
        out.write(lines(1000, 1100))
    assert metrics.chart("single-0", "loss").count == 1100
    assert store.stat(key).size > 1100 * 8 * 3  # parsed past the bound since the last index
    forget_charts()  # the next process
    parsed: list[int] = []
    monkeypatch.setattr("octotrain.metrics_series.ChartColumns._parse",
                        lambda self, data: parsed.append(len(data)))  # fmt: skip
    assert metrics.chart("single-0", "loss").count == 1100 and parsed == []


def test_a_chart_being_read_does_not_hold_up_another(tmp_path: Path) -> None:
    layout = RunLayout(tmp_path / "runs", 7, "manual__1-abc")
    store = object_store_from_url(f"file://{tmp_path / 'o'}")
    folder = tmp_path / "metrics"
    folder.mkdir()
    two = {"id": "7", "metas": [*META["metas"], {"name": "acc", "x": "step", "ys": ["acc"],
                                                  "description": "a"}]}  # fmt: skip
    (folder / "metrics.json").write_text(json.dumps(two))
    (folder / "loss.jsonl").write_text(lines(0, 10))
    (folder / "acc.jsonl").write_text(json.dumps({"step": 1, "acc": 0.5}) + "\n")
    upload_folder(store, folder, layout.objects.metrics("single-0"))
    slow, release = threading.Event(), threading.Event()
    original = store.read_range

    def held(key: str, start: int, end: int) -> bytes:
        if key.endswith("loss.jsonl"):
            slow.set()
            release.wait(10)
        return original(key, start, end)

    store.read_range = held  # type: ignore[method-assign]
    metrics = RunMetrics(folder_then_store(layout, store, live=False), store, ["single-0"])
    reader = threading.Thread(target=metrics.chart, args=("single-0", "loss"))
    reader.start()
    try:
        assert slow.wait(10)
        assert metrics.chart("single-0", "acc").count == 1  # while loss is still being read
        assert reader.is_alive()
    finally:
        release.set()
        reader.join(10)
