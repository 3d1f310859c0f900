"""Comparing runs over HTTP: the runs side by side (charts, finals, parameters with the differing
ones named), one chart of every run on a shared x, the trend of a task's retraining runs; bad
``runs`` refused naming the field, other projects' runs not disclosed, login required."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from hooks.storage.catalog import default_catalog
from octotrain.catalog.models import Run, RunState
from octotrain.planning import run_key
from octotrain.run_layout import RunLayout
from octotrain.settings import get_settings
from tests.factories import VALID_TASK
from tests.plan_rows import recorded
from tests.plugins.api.conftest import Api

LOSS = {"name": "loss", "x": "step", "ys": ["loss"], "description": "training-loss"}
ACCURACY = {"name": "acc", "x": "epoch", "ys": ["top1", "top5"], "description": "accuracy"}
BOBS_TASK = {"project": "other", "name": "bobs-compared", "resource_spec": "other-spec",
             "algorithm": "other-algo", "model_repository": "other-model"}  # fmt: skip
START = datetime(2026, 11, 1, 2, 0, tzinfo=UTC)


def new_task(
    api: Api, name: str, user: str = "alice", document: dict[str, Any] | None = None
) -> int:
    body = (document or VALID_TASK) | {"name": name}
    answer = api.client.post("/api/v1/tasks", json=body, headers=api.as_user(user))
    assert answer.status_code == 201, answer.text
    return int(answer.json()["id"])


def new_run(
    task_id: int,
    name: str,
    *,
    parameters: dict[str, Any] | None = None,
    charts: dict[str, tuple[dict[str, Any], list[dict[str, float]]]] | None = None,
    trigger: str = "manual",
    started_at: datetime = START,
) -> int:
    """A run of one node, an hour long, that wrote ``charts`` (name → (meta, points))."""
    key = run_key(f"{trigger}__{name}")
    with default_catalog().session() as session:
        run = Run(task_id=task_id, airflow_run_id=f"{trigger}__{name}", node_count=1,
                  state=RunState.SUCCESS, trigger=trigger, started_at=started_at,
                  ended_at=started_at + timedelta(hours=1),
                  plan=recorded(run_key=key, node_indices=["single-0"],
                                parameters=parameters or {}))  # fmt: skip
        session.add(run)
        session.flush()
        run_id = run.id
    if charts:
        folder = RunLayout(get_settings().runs_dir, task_id, key).node_folders("single-0").metrics
        folder.mkdir(parents=True, exist_ok=True)
        metas = [meta for meta, _ in charts.values()]
        (folder / "metrics.json").write_text(json.dumps({"id": "1", "metas": metas}))
        for chart, (_, points) in charts.items():
            lines = "".join(json.dumps(point) + "\n" for point in points)
            (folder / f"{chart}.jsonl").write_text(lines)
    return run_id


def loss(*values: tuple[int, float]) -> tuple[dict[str, Any], list[dict[str, float]]]:
    return LOSS, [{"step": step, "loss": value} for step, value in values]


def runs(*ids: int) -> str:
    return ",".join(str(run_id) for run_id in ids)


def test_runs_side_by_side(api: Api) -> None:
    first, second = new_task(api, "compare-a"), new_task(api, "compare-b")
    one = new_run(first, "a1", parameters={"lr": 0.1, "epochs": 3},
                  charts={"loss": loss((0, 2.0), (10, 1.0))})  # fmt: skip
    two = new_run(first, "a2", parameters={"lr": 0.01, "epochs": 3},
                  charts={"loss": loss((0, 2.5), (10, 0.8), (20, 0.5))})  # fmt: skip
    three = new_run(second, "b1", parameters={"lr": 0.1, "epochs": 3, "seed": 7}, charts={
        "loss": loss((5, 1.5)),
        "acc": (ACCURACY, [{"epoch": 1, "top1": 0.5, "top5": 0.8}, {"epoch": 2, "top1": 0.6}]),
    })  # fmt: skip
    answer = api.client.get("/api/v1/compare", params={"runs": runs(one, two, three)},
                            headers=api.as_user("alice"))  # fmt: skip
    assert answer.status_code == 200, answer.text
    body = answer.json()
    labels = [run["label"] for run in body["runs"]]
    assert labels == [
        f"compare-a · #{one}",
        f"compare-a · #{two}",
        f"compare-b · #{three}",
    ]
    assert body["project"] == "demo" and body["runs"][2]["task_id"] == second
    charts = {chart["name"]: chart for chart in body["charts"]}
    assert charts["loss"]["runs"] == labels and charts["acc"]["runs"] == [labels[2]]
    assert charts["acc"]["lines"] == ["top1", "top5"] and charts["acc"]["x"] == "epoch"
    assert body["finals"][labels[1]]["loss"]["loss"] == {"x": 20.0, "value": 0.5}
    assert body["finals"][labels[2]]["acc"] == {"top1": {"x": 2.0, "value": 0.6},
                                                "top5": {"x": 1.0, "value": 0.8}}  # fmt: skip
    assert body["differing"] == ["lr", "seed"]
    assert {row["name"]: row["values"] for row in body["parameters"]} == {
        "epochs": ["3", "3", "3"], "lr": ["0.1", "0.01", "0.1"], "seed": [None, None, "7"],
    }  # fmt: skip


def test_one_chart_of_every_run_on_a_shared_x(api: Api) -> None:
    task = new_task(api, "compare-chart")
    one = new_run(task, "c1", charts={"loss": loss((0, 2.0), (10, 1.0))})
    two = new_run(task, "c2", charts={"loss": loss((5, 1.5), (10, 0.9))})
    silent = new_run(task, "c3")  # wrote no metrics
    alice = api.as_user("alice")
    answer = api.client.get("/api/v1/compare/charts/loss",
                            params={"runs": runs(one, two, silent)}, headers=alice)  # fmt: skip
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["x_name"] == "step" and body["lines"] == ["loss"] and body["x"] == [0, 5, 10]
    assert body["values"] == {f"#{one}": {"loss": [2.0, None, 1.0]},
                              f"#{two}": {"loss": [None, 1.5, 0.9]}}  # fmt: skip
    assert body["missing"] == [f"#{silent}"] and body["downsampled"] is False
    nobody = api.client.get("/api/v1/compare/charts/acc", params={"runs": runs(one, two)},
                            headers=alice)  # fmt: skip
    assert nobody.status_code == 404 and "'acc'" in nobody.json()["detail"]


def test_a_long_run_is_downsampled_with_its_peaks(api: Api) -> None:
    task = new_task(api, "compare-long")
    steps = [(step, 99.0 if step == 777 else 1.0 / (step + 1)) for step in range(5000)]
    long = new_run(task, "l1", charts={"loss": loss(*steps)})
    short = new_run(task, "l2", charts={"loss": loss((0, 1.0))})
    body = api.client.get("/api/v1/compare/charts/loss",
                          params={"runs": runs(long, short), "points": 100},
                          headers=api.as_user("alice")).json()  # fmt: skip
    assert body["downsampled"] is True and len(body["x"]) <= 200
    assert 99.0 in body["values"][f"#{long}"]["loss"]


def test_bad_runs_are_refused_naming_the_field(api: Api) -> None:
    task = new_task(api, "compare-bad")
    mine = [new_run(task, f"m{index}") for index in range(2)]
    bobs = new_run(new_task(api, "bobs-compared", "bob", BOBS_TASK), "b")
    alice, bob = api.as_user("alice"), api.as_user("bob")

    def refusal(text: str | None, headers: dict[str, str] = alice) -> str:
        params = {} if text is None else {"runs": text}
        for path in ("/api/v1/compare", "/api/v1/compare/charts/loss"):
            answer = api.client.get(path, params=params, headers=headers)
            assert answer.status_code == 400, (path, answer.text)
        [problem] = answer.json()["problems"]
        assert problem["field"] == "runs", problem
        return str(problem["rule"])

    assert "'x' is not a run id" in refusal(f"{mine[0]},x")
    assert "1 given" in refusal(str(mine[0]))
    assert "9 given" in refusal(runs(*range(1, 10)))
    assert "given twice" in refusal(runs(mine[0], mine[0]))
    assert refusal(runs(mine[0], 999_999)) == "no run 999999 in the projects you are a member of"
    # an administrator sees both projects, but their runs are not comparable
    assert (
        refusal(runs(*mine, bobs))
        == "the runs must be of one project; these are of 'demo', 'other'"
    )
    # a member of another project is not told that alice's runs exist
    assert refusal(runs(bobs, *mine), bob) == (
        f"no run {mine[0]}, {mine[1]} in the projects you are a member of"
    )
    missing = api.client.get("/api/v1/compare", headers=alice)
    assert missing.status_code == 400 and "runs" in missing.text


def test_the_trend_of_a_tasks_retraining_runs(api: Api) -> None:
    task = new_task(api, "compare-trend")
    day = timedelta(days=1)
    later = new_run(task, "t3", trigger="scheduled", started_at=START + 2 * day,
                    charts={"loss": loss((0, 2.0), (10, 0.4))})  # fmt: skip
    first = new_run(task, "t1", trigger="scheduled", started_at=START,
                    charts={"loss": loss((10, 0.6))})  # fmt: skip
    by_data = new_run(task, "t2", trigger="asset_triggered", started_at=START + day,
                      charts={"loss": loss((10, 0.5))})  # fmt: skip
    new_run(task, "t0", trigger="manual", started_at=START + day, charts={"loss": loss((1, 9.0))})
    alice = api.as_user("alice")
    body = api.client.get(f"/api/v1/tasks/{task}/trend", headers=alice).json()
    assert [run["id"] for run in body["runs"]] == [first, by_data, later]
    points = body["charts"]["loss"]["loss"]
    assert [(point["run_id"], point["value"]) for point in points] == [
        (first, 0.6), (by_data, 0.5), (later, 0.4),
    ]  # fmt: skip
    assert points[0]["started_at"].startswith("2026-11-01T02:00:00")
    latest = api.client.get(f"/api/v1/tasks/{task}/trend", params={"limit": 2}, headers=alice)
    assert [run["id"] for run in latest.json()["runs"]] == [by_data, later]
    manual_only = new_task(api, "compare-manual")
    new_run(manual_only, "x", charts={"loss": loss((1, 1.0))})
    empty = api.client.get(f"/api/v1/tasks/{manual_only}/trend", headers=alice).json()
    assert empty == {"task_id": manual_only, "runs": [], "charts": {}}
    refused = api.client.get(f"/api/v1/tasks/{task}/trend", params={"limit": 0}, headers=alice)
    assert refused.status_code == 400 and "limit" in refused.text
    hidden = api.client.get(f"/api/v1/tasks/{task}/trend", headers=api.as_user("bob"))
    assert hidden.status_code == 404


def test_comparing_requires_a_login(api: Api) -> None:
    for path in ("/api/v1/compare?runs=1,2", "/api/v1/compare/charts/loss?runs=1,2",
                 "/api/v1/tasks/1/trend", "/ui/compare?runs=1,2"):  # fmt: skip
        assert api.client.get(path).status_code == 401, path
