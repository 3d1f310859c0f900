"""Training tasks from the command line (their runs stopped and resumed), and ``task run``
against a real Airflow api-server."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select, update
from typer.testing import CliRunner

from cli.main import app
from hooks.airflow.airflow_rest import AirflowRestClient
from hooks.local.local_admission import machine_capacity
from hooks.runs.checkpoint_sync import CheckpointSync
from hooks.runs.run_abort import RunAbortMarker
from hooks.runs.run_files import FolderRunFiles
from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import LocalFolderStore
from octotrain.admission import Demand
from octotrain.catalog.admissions import request_admission, settle_admissions
from octotrain.catalog.models import Run, RunState, TrainingTask
from octotrain.planning import run_key
from octotrain.run_layout import RunLayout, RunObjects
from octotrain.settings import get_settings
from tests.cli.conftest import Cli
from tests.live_airflow import HTTP_SECONDS, LiveAirflow, demo_airflow
from tests.plan_rows import recorded

TASK_YAML = """\
project: demo
name: cli-task
resource_spec: cpu-small
node_count: 1
algorithm: linear-regression-numpy
parameters: {epochs: 3}
model_repository: house-price-model
data_inputs: [{dataset: house-prices, version: v1}]
"""


@pytest.mark.parametrize("catalog_url", ["sqlite"], indirect=True)
def test_create_show_copy_update_delete(cli: Cli) -> None:
    path = cli.write("task.yaml", TASK_YAML)
    checked = cli.json("task", "create", "-f", path, "--dry-run")
    assert checked["parameters"]["epochs"] == 3 and checked["container_user"] == "1000"
    assert [t["name"] for t in cli.json("task", "list")] == ["演示-房价回归"]
    created = cli.json("task", "create", "-f", path)
    assert (created["name"], created["dag_id"]) == ("cli-task", f"octotrain_task_{created['id']}")
    again = cli("task", "create", "-f", path)
    assert again.exit_code == 1
    assert "name: a task named 'cli-task' already exists in project 'demo'" in again.stderr
    copy = cli.json("task", "copy", str(created["id"]), "--name", "cli-task-2")
    change = cli.write("change.yaml", "priority: -5\n")
    assert cli.json("task", "update", str(copy["id"]), "-f", change)["priority"] == -5
    listed = cli("task", "list", "-p", "demo")
    assert "cli-task-2" in listed.stdout
    assert cli("task", "delete", str(copy["id"])).exit_code == 0
    assert cli("task", "show", str(copy["id"])).exit_code == 1


@pytest.mark.parametrize("catalog_url", ["sqlite"], indirect=True)
def test_a_task_document_from_standard_input(cli: Cli) -> None:
    result = cli("task", "create", "-f", "-", "--json", input=json.dumps({"project": "demo"}))
    assert result.exit_code == 1
    fields = {problem["field"] for problem in json.loads(result.stdout)["problems"]}
    assert fields == {"name", "resource_spec", "algorithm", "model_repository"}


@pytest.mark.parametrize("catalog_url", ["sqlite"], indirect=True)
def test_status_and_logs_of_a_run(cli: Cli, catalog: CatalogHook, octotrain_env: Path) -> None:
    with catalog.session() as session:
        run = Run(
            task_id=1,
            airflow_run_id="manual__1",
            state=RunState.FAILED,
            node_count=2,
            plan=recorded(run_key="manual__1-abc", node_indices=["distributed-0", "distributed-1"]),
        )
        session.add(run)
    logs = octotrain_env / "runs" / "1" / "manual__1-abc" / "logs"
    logs.mkdir(parents=True)
    (logs / "train-1-distributed-1.log").write_text("epoch 1 loss 0.5\n")
    (logs / "octopus-train-1-distributed-1-supplemental.logs").write_text("exit code 3\n")
    status = cli.json("task", "status", "1")
    assert [r["state"] for r in status["runs"]] == ["failed"]
    listing = cli("task", "logs", "1")
    assert "train-1-distributed-1.log" in listing.stdout
    shown = cli("task", "logs", "1", "--node", "distributed-1")
    assert shown.stdout == "epoch 1 loss 0.5\n"
    supplemental = cli("task", "logs", "1", "--node", "distributed-1", "--kind", "supplemental")
    assert supplemental.stdout == "exit code 3\n"
    assert cli("task", "logs", "1", "--node", "distributed-7").exit_code == 1
    assert "no log kind 'debug'" in cli("task", "logs", "1", "--kind", "debug").stderr


@pytest.mark.parametrize("catalog_url", ["sqlite"], indirect=True)
def test_runs_says_where_a_waiting_run_stands_and_why(cli: Cli, catalog: CatalogHook) -> None:
    """Two runs of 40 cores each on the tests' 64: the second waits for the first."""
    with catalog.session() as session:
        runs = [Run(task_id=1, airflow_run_id=f"manual__{n}", state=RunState.RUNNING,
                    node_count=2, plan=recorded(run_key=f"k{n}")) for n in (1, 2)]  # fmt: skip
        session.add_all(runs)
        session.flush()
        for run in runs:
            request_admission(session, run_id=run.id, project="demo", priority=0,
                              demand=Demand(2, 40, 1024), now=datetime.now(UTC))  # fmt: skip
            settle_admissions(session, machine_capacity(), now=datetime.now(UTC))
    listed = cli("task", "runs", "1")
    assert listed.exit_code == 0, listed.stderr
    waiting = next(line for line in listed.stdout.splitlines() if "manual__2" in line)
    said = (
        r"waiting \d+ s in queue local, position 1: waiting for this machine: 24 of 64 "
        r"cores free, the run needs 40 cores$"
    )
    assert re.search(said, waiting), listed.stdout
    first = next(line for line in listed.stdout.splitlines() if "manual__1" in line)
    assert "admitted by queue local after waiting 0 s" in first
    [shown] = [run for run in cli.json("task", "runs", "1") if run["airflow_run_id"] == "manual__2"]
    assert shown["admission"] | {"waited_seconds": 0} == {
        "queue": "local", "asked": "2 nodes, 40 cores, 1 GiB of memory", "position": 1,
        "reason": "waiting for this machine: 24 of 64 cores free, the run needs 40 cores",
        "waited_seconds": 0, "admitted": False,
    }  # fmt: skip


# ---- task run against a live api-server -------------------------------------------------------


@pytest.fixture(scope="module")
def airflow_with_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveAirflow]:
    root = tmp_path_factory.mktemp("live")
    with (
        demo_airflow(root, {"OCTOTRAIN_STATE_DIR": str(root / "state")}) as (airflow, _),
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setenv("OCTOTRAIN_AIRFLOW_API_URL", airflow.url)
        patch.setenv("OCTOTRAIN_AIRFLOW_PASSWORD", airflow.password)
        get_settings.cache_clear()
        yield airflow


def dag_runs(airflow: LiveAirflow, dag_id: str) -> list[dict[str, object]]:
    response = httpx.get(
        f"{airflow.url}/api/v2/dags/{dag_id}/dagRuns",
        headers=airflow.admin_headers(),
        timeout=HTTP_SECONDS,
    )
    assert response.status_code == 200, response.text
    return list(response.json()["dag_runs"])


def test_task_run_triggers_the_tasks_dag_through_airflow(airflow_with_demo: LiveAirflow) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["task", "run", "1", "--json"])
    assert result.exit_code == 0, result.output
    started = json.loads(result.stdout)
    assert started["dag_id"] == "octotrain_task_1" and started["state"] == "queued"
    [run] = dag_runs(airflow_with_demo, "octotrain_task_1")
    assert run["dag_run_id"] == started["run_id"]
    # no scheduler runs here: waiting ends in a clear timeout and exit status 1
    waited = runner.invoke(app, ["task", "run", "1", "--wait", "--timeout", "2"])
    assert waited.exit_code == 1
    assert "timed out after 2s waiting for run" in waited.stderr


def test_task_run_refuses_a_broken_task_before_asking_airflow(
    airflow_with_demo: LiveAirflow,
) -> None:
    catalog = CatalogHook(get_settings().catalog_url)
    with catalog.session() as session:
        task = session.get(TrainingTask, 1)
        original = task.spec
        task.spec = original | {"algorithm": "deleted-algorithm"}
    before = len(dag_runs(airflow_with_demo, "octotrain_task_1"))
    try:
        result = CliRunner().invoke(app, ["task", "run", "1"])
        assert result.exit_code == 1
        assert "algorithm: algorithm 'deleted-algorithm' does not exist" in result.stderr
        assert len(dag_runs(airflow_with_demo, "octotrain_task_1")) == before
    finally:
        with catalog.session() as session:
            session.execute(
                update(TrainingTask)
                .where(TrainingTask.id == 1)
                .values(
                    spec=session.get(TrainingTask, 1).spec
                    | {"algorithm": "linear-regression-numpy"}
                )
            )
        catalog.dispose()


def test_task_run_passes_this_runs_settings_and_refuses_bad_ones_before_airflow(
    airflow_with_demo: LiveAirflow,
) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["task", "run", "1", "--conf", '{"epochs": 3}', "--json"])
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.stdout)["run_id"]
    [run] = [
        r for r in dag_runs(airflow_with_demo, "octotrain_task_1") if r["dag_run_id"] == run_id
    ]
    assert run["conf"] == {"epochs": 3}
    before = len(dag_runs(airflow_with_demo, "octotrain_task_1"))
    for conf, words in (
        ('{"epochs": 0}', "parameters.epochs: must be within [1, 100000], got 0"),
        ("[1]", "conf: must be a JSON object"),
        ("{epochs", "conf: is not JSON"),
    ):
        refused = runner.invoke(app, ["task", "run", "1", "--conf", conf])
        assert refused.exit_code == 1 and words in refused.stderr, refused.stderr
    assert len(dag_runs(airflow_with_demo, "octotrain_task_1")) == before


def test_task_run_says_when_airflow_cannot_be_reached(
    airflow_with_demo: LiveAirflow, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OCTOTRAIN_AIRFLOW_API_URL", "http://127.0.0.1:9")
    get_settings.cache_clear()
    result = CliRunner().invoke(app, ["task", "run", "1"])
    get_settings.cache_clear()
    assert result.exit_code == 1
    assert "cannot reach Airflow at http://127.0.0.1:9" in result.stderr


def test_stop_notes_the_run_in_airflow_after_its_note(
    cli: Cli, catalog: CatalogHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    with catalog.session() as session:
        session.add(Run(task_id=1, airflow_run_id="manual__3", state=RunState.RUNNING,
                        node_count=1))  # fmt: skip
    patched: list[httpx.Request] = []

    def airflow(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/api/v2/dags/octotrain_task_1/dagRuns/manual__3"
        if request.method == "GET":
            return httpx.Response(200, json={"dag_run_id": "manual__3", "note": "retrain"})
        patched.append(request)
        return httpx.Response(200, json={})

    def client(_settings: object) -> AirflowRestClient:
        fake = AirflowRestClient("http://airflow.test")
        fake.http = httpx.Client(base_url=fake.base_url, transport=httpx.MockTransport(airflow))
        return fake

    monkeypatch.setattr(AirflowRestClient, "from_settings", staticmethod(client))
    stopped = cli.json("task", "stop", "1")
    assert stopped["noted_in_airflow"] is True
    [patch] = patched
    assert patch.method == "PATCH" and patch.url.params["update_mask"] == "note"
    note = json.loads(patch.content)["note"]
    assert note.startswith(f"retrain\n\n**Stopped by {get_settings().airflow_username}** at ")


def test_resume_triggers_a_run_resuming_a_failed_one_with_a_checkpoint(
    cli: Cli, catalog: CatalogHook, octotrain_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = recorded(run_key="manual__9-abc", node_indices=["single-0"])
    with catalog.session() as session:
        earlier = Run(task_id=1, airflow_run_id="manual__9", state=RunState.RUNNING,
                      node_count=1, plan=plan)  # fmt: skip
        session.add(earlier)
        session.flush()
        earlier_id = earlier.id
    active = cli("task", "resume", "1", "--run", "manual__9")
    assert active.exit_code == 1
    assert "only a failed or stopped run can be resumed" in active.stderr
    with catalog.session() as session:
        session.execute(update(Run).where(Run.id == earlier_id).values(state=RunState.FAILED))
    bare = cli("task", "resume", "1", "--run", str(earlier_id))
    assert bare.exit_code == 1 and "left no checkpoint" in bare.stderr
    folder = octotrain_env / "checkpoint"
    folder.mkdir()
    (folder / "step-10.pt").write_bytes(b"weights")
    store = LocalFolderStore(octotrain_env / "objects")
    CheckpointSync(store, objects=RunObjects(1, "manual__9-abc"), run_id="manual__9",
                   node_index="single-0", folder=folder, every_seconds=0,
                   note=lambda _: None).sync(final=True)  # fmt: skip
    triggered: list[dict[str, object]] = []
    run_ids: list[str] = []

    def airflow(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            body = json.loads(request.content)
            triggered.append(body["conf"])
            run_ids.append(body["dag_run_id"])  # the client names the run it starts
            return httpx.Response(200, json={"dag_run_id": body["dag_run_id"]})
        return httpx.Response(200, json={})  # the DAG exists; it is unpaused

    def client(_settings: object) -> AirflowRestClient:
        fake = AirflowRestClient("http://airflow.test")
        fake.http = httpx.Client(base_url=fake.base_url, transport=httpx.MockTransport(airflow))
        return fake

    monkeypatch.setattr(AirflowRestClient, "from_settings", staticmethod(client))
    resumed = cli.json("task", "resume", "1", "--run", "manual__9", "--conf", '{"epochs": 9}')
    assert resumed["run_id"] == run_ids[0] and run_ids[0].startswith("request__")
    assert triggered == [{"epochs": 9, "resume_from": earlier_id}]
    with catalog.session() as session:  # recorded as queued before Airflow was asked
        queued = session.scalars(select(Run).where(Run.airflow_run_id == run_ids[0])).one()
        assert (queued.state, queued.resumed_from_id) == (RunState.QUEUED, earlier_id)
        assert queued.triggered_by == get_settings().airflow_username

    def refusing(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"detail": "refused"})

    def refusing_client(_settings: object) -> AirflowRestClient:
        fake = AirflowRestClient("http://airflow.test")
        fake.http = httpx.Client(base_url=fake.base_url, transport=httpx.MockTransport(refusing))
        return fake

    monkeypatch.setattr(AirflowRestClient, "from_settings", staticmethod(refusing_client))
    assert cli("task", "resume", "1", "--run", "manual__9").exit_code == 1
    with catalog.session() as session:  # the refused trigger left no queued run behind
        assert len(session.scalars(select(Run)).all()) == 2


def test_stop_raises_the_active_runs_flag_and_refuses_an_ended_run(
    cli: Cli, catalog: CatalogHook, octotrain_env: Path
) -> None:
    with catalog.session() as session:
        session.add(Run(task_id=1, airflow_run_id="manual__2", state=RunState.RUNNING,
                        node_count=1))  # fmt: skip
    result = cli("task", "stop", "1", "--json")
    assert result.exit_code == 0, result.output
    stopped = json.loads(result.stdout)
    assert stopped["run_id"] == "manual__2"
    assert stopped["stopping"] == f"stopped by {get_settings().airflow_username}"
    # No Airflow to reach here: the run stops all the same, and the user is told.
    assert stopped["noted_in_airflow"] is False
    assert "warning: stopping, but Airflow's run has no note saying so" in result.stderr
    flag = RunAbortMarker(
        FolderRunFiles(RunLayout(octotrain_env / "runs", 1, run_key("manual__2")))
    ).flag()
    assert flag is not None and flag.stopped
    with catalog.session() as session:
        session.scalars(
            select(Run).where(Run.airflow_run_id == "manual__2")
        ).one().state = RunState.STOPPED
    ended = cli("task", "stop", "1", "--run", "manual__2")
    assert ended.exit_code == 1 and "has already ended (stopped)" in ended.stderr
