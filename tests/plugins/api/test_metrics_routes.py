"""Metrics and resources over HTTP: charts and the exact problems of a bad meta file, points
downsampled with peaks kept, live refresh with ``after``, raw CSV, a collected run's charts
answered from their index as they were from their files, resource samples with the missing
packages named; other projects' runs are not found."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from hooks.runs.chart_series_index import index_node_charts
from hooks.runs.run_files import StoreRunFiles
from hooks.runs.run_metrics import forget_charts
from hooks.storage.catalog import default_catalog
from hooks.storage.object_store import upload_folder
from octotrain.catalog.models import Run, RunState
from octotrain.planning import run_key
from octotrain.run_layout import RunLayout
from octotrain.settings import get_settings
from tests.factories import VALID_TASK
from tests.plan_rows import recorded
from tests.plugins.api.conftest import Api

NODES = ["distributed-0", "distributed-1"]
META = {"id": "1", "metas": [
    {"name": "loss", "x": "step", "ys": ["loss", "lr"], "description": "loss-and-lr",
     "smooth": "true", "with_timestamp": "true"},
    {"name": "per-class", "x": "epoch", "ys": ["f1"], "series": ["a", "b", "c", "d"],
     "description": "f1-by-class", "smooth": False},
    {"name": "bad name!", "x": "step", "ys": ["x"], "description": "broken"},
    {"name": "<script>", "x": "step", "ys": ["y"], "description": "also-broken"},
]}  # fmt: skip


def new_run(api: Api, name: str) -> tuple[str, RunLayout]:
    task = api.client.post(
        "/api/v1/tasks", json=VALID_TASK | {"name": name}, headers=api.as_user("alice")
    ).json()
    key = run_key(f"manual__{name}")
    with default_catalog().session() as session:
        run = Run(task_id=task["id"], airflow_run_id=f"manual__{name}", node_count=2,
                  state=RunState.RUNNING,
                  plan=recorded(run_key=key, node_indices=NODES))  # fmt: skip
        session.add(run)
        session.flush()
        run_id = run.id
    return f"/api/v1/tasks/{task['id']}/runs/{run_id}", RunLayout(
        get_settings().runs_dir, task["id"], key
    )


def write_metrics(folder: Path, points: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metrics.json").write_text(json.dumps(META))
    with (folder / "loss.jsonl").open("w") as out:
        for step in range(points):
            loss = 99.0 if step == 4321 else 1 / (step + 1)
            out.write(
                json.dumps({"step": step, "loss": loss, "lr": 0.1, "timestamp": 1e9 + step}) + "\n"
            )
        out.write('{"step": "torn')  # a writer caught mid-line


def test_charts_and_the_problems_of_the_meta_file(api: Api) -> None:
    base, layout = new_run(api, "metrics-meta")
    write_metrics(layout.node_folders("distributed-0").metrics, 10)
    answer = api.client.get(f"{base}/metrics", headers=api.as_user("alice")).json()
    assert answer["node"] == "distributed-0" and answer["declared"] and answer["live"]
    assert [chart["name"] for chart in answer["charts"]] == ["loss", "per-class"]
    assert {p["field"] for p in answer["problems"]} == {"metas[2].name", "metas[3].name"}
    other = api.client.get(f"{base}/metrics", params={"node": "distributed-1"},
                           headers=api.as_user("alice")).json()  # fmt: skip
    assert other["declared"] is False and other["charts"] == []
    missing = api.client.get(f"{base}/metrics", params={"node": "distributed-9"},
                             headers=api.as_user("alice"))  # fmt: skip
    assert missing.status_code == 404


def test_points_are_downsampled_with_peaks_and_refreshed(api: Api) -> None:
    base, layout = new_run(api, "metrics-points")
    folder = layout.node_folders("distributed-0").metrics
    write_metrics(folder, 100_000)
    alice = api.as_user("alice")
    series = api.client.get(f"{base}/metrics/loss", headers=alice).json()
    assert series["total"] == 100_000 and series["downsampled"] and series["skipped"] == 0
    assert len(series["x"]) <= 4002
    assert max(series["lines"]["loss"]) == 99.0 and min(series["lines"]["loss"]) == 1e-5
    assert series["x"][0] == 0 and series["x"][-1] == 99_999
    assert series["timestamps"][0] == 1e9
    with (folder / "loss.jsonl").open("a") as out:  # the torn line completes, one more comes
        out.write('"}\n{"step": 100000, "loss": 0.5, "lr": 0.1}\n')
    fresh = api.client.get(f"{base}/metrics/loss", params={"after": series["last"]},
                           headers=alice).json()  # fmt: skip
    assert fresh["x"] == [100_000] and fresh["lines"]["loss"] == [0.5]
    assert fresh["skipped"] == 1 and fresh["total"] == 100_001
    assert api.client.get(f"{base}/metrics/bad name!", headers=alice).status_code == 404


def test_csv_is_every_raw_point(api: Api) -> None:
    base, layout = new_run(api, "metrics-csv")
    write_metrics(layout.node_folders("distributed-0").metrics, 25_000)
    answer = api.client.get(f"{base}/metrics/loss/csv", headers=api.as_user("alice"))
    assert answer.headers["content-disposition"].endswith("-distributed-0-loss.csv")
    rows = list(csv.reader(io.StringIO(answer.text)))
    assert rows[0] == ["step", "loss", "lr", "timestamp"]
    assert len(rows) == 25_001 and rows[4322][:2] == ["4321", "99"]
    assert [float(value) for value in rows[1]] == [0.0, 1.0, 0.1, 1e9]


def test_a_collected_run_is_answered_from_its_index(
    api: Api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first request after the collect stage indexed the charts parses nothing, and
    answers what parsing the file answered."""
    base, layout = new_run(api, "metrics-indexed")
    with default_catalog().session() as session:  # ended: read from the store (collected)
        session.get(Run, int(base.rsplit("/", 1)[1])).state = RunState.SUCCESS  # type: ignore[union-attr]
    folder = tmp_path / "collected"  # in the object store only, as collect_logs leaves it
    write_metrics(folder, 30_000)
    upload_folder(api.store, folder, layout.objects.metrics("distributed-0"))
    alice = api.as_user("alice")
    paths = (f"{base}/metrics/loss", f"{base}/metrics/loss/csv")
    parsed = [api.client.get(path, headers=alice).content for path in paths]
    assert index_node_charts(api.store, StoreRunFiles(api.store, layout.objects), "distributed-0")
    forget_charts()  # a fresh api-server
    monkeypatch.setattr("octotrain.metrics_series.ChartColumns._parse", None)  # never called
    assert [api.client.get(path, headers=alice).content for path in paths] == parsed
    assert json.loads(parsed[0])["total"] == 30_000


def test_resources_name_missing_packages_and_every_gpu(api: Api) -> None:
    base, layout = new_run(api, "resources")
    samples: list[dict[str, Any]] = [{"timestamp": 1.0, "missing": ["pynvml"]}]
    samples += [{"timestamp": 2.0 + n, "cpu_percent": 50.0 + n, "memory_percent": 10.0,
                 "memory_bytes": 1000, "gpus": [
                     {"index": 0, "utilization_percent": 90.0, "memory_percent": 40.0},
                     {"index": 1, "utilization_percent": 10.0, "memory_percent": 5.0}]}
                for n in range(3)]  # fmt: skip
    path = layout.resources_path("distributed-1")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(sample) + "\n" for sample in samples) + '{"torn')
    answer = api.client.get(f"{base}/resources", params={"node": "distributed-1"},
                            headers=api.as_user("alice")).json()  # fmt: skip
    assert answer["missing"] == ["pynvml"] and answer["skipped"] == 1
    assert answer["columns"]["cpu_percent"] == [50.0, 51.0, 52.0]
    assert answer["columns"]["gpu1_utilization_percent"] == [10.0, 10.0, 10.0]
    assert answer["timestamps"] == [2.0, 3.0, 4.0]
    empty = api.client.get(f"{base}/resources", headers=api.as_user("alice")).json()
    assert empty["columns"] == {} and empty["missing"] == []
    assert answer["gpu_count"] is None  # a plan without resources: validate never planned it


def test_resources_say_how_many_gpus_the_run_planned(api: Api) -> None:
    """A node of a spec without GPUs is not to be told that it cannot measure them: the answer
    carries the GPU count of the run's own plan, not of the spec as it is now."""
    base, _ = new_run(api, "resources-gpus")
    run_id = int(base.rsplit("/", 1)[1])
    for gpus in (0, 2):
        with default_catalog().session() as session:
            run = session.get(Run, run_id)
            assert run is not None
            run.plan = recorded(**run.plan | {"resources": {"spec": "small", "gpu_count": gpus}})
        answer = api.client.get(f"{base}/resources", headers=api.as_user("alice")).json()
        assert answer["gpu_count"] == gpus


def test_other_projects_runs_are_not_found(api: Api) -> None:
    base, layout = new_run(api, "metrics-private")
    write_metrics(layout.node_folders("distributed-0").metrics, 10)
    for path in ("/metrics", "/metrics/loss", "/metrics/loss/csv", "/resources"):
        assert api.client.get(base + path, headers=api.as_user("bob")).status_code == 404
        assert api.client.get(base + path).status_code == 401
