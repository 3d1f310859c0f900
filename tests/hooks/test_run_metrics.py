"""A run's metrics and resource samples where they are (run folder, local store, S3), chart data
read incrementally as the sidecar replaces the object with a longer one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hooks.object_store import object_store_from_url
from hooks.run_metrics import RunMetrics
from octotrain.errors import NotFound
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
            target = layout.run_dir / "nodes" / "single-0" / relative
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

    metrics = RunMetrics(layout, store, ["single-0"])
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
        assert data_read == len(lines(1000, 1500)) and meta_read < 200  # only what is new
    put("metrics/loss.jsonl", lines(0, 10))  # rewritten from the start: read again
    assert metrics.chart("single-0", "loss").count == 10
    assert metrics.resources("single-0").columns["cpu_percent"] == [5.0]
    with pytest.raises(NotFound, match="no node 'distributed-3'"):
        metrics.meta("distributed-3")
    with pytest.raises(NotFound, match="no valid chart 'acc'"):
        metrics.chart("single-0", "acc")
