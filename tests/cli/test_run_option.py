"""``--run`` of ``octotrain task logs`` and ``task stop`` takes either name of a run: the
catalog's id (the ``id`` of ``GET /tasks/{id}/runs``) or Airflow's run id; when neither
matches, the error names both forms and lists the task's recent runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hooks.storage.catalog import CatalogHook
from octotrain.catalog.models import Run, RunState
from tests.cli.conftest import Cli
from tests.plan_rows import recorded

pytestmark = pytest.mark.parametrize("catalog_url", ["sqlite"], indirect=True)


@pytest.fixture
def runs(cli: Cli, catalog: CatalogHook, octotrain_env: Path) -> dict[str, int]:
    """Two runs of task 1, each with one log file: {Airflow run id: catalog id}."""
    ids = {}
    with catalog.session() as session:
        for airflow_id, state in (
            ("manual__old", RunState.FAILED),
            ("manual__new", RunState.RUNNING),
        ):
            run = Run(task_id=1, airflow_run_id=airflow_id, state=state, node_count=1,
                      plan=recorded(run_key=airflow_id, node_indices=["single-0"]))  # fmt: skip
            session.add(run)
            session.flush()
            ids[airflow_id] = run.id
            logs = octotrain_env / "runs" / "1" / airflow_id / "logs"
            logs.mkdir(parents=True)
            (logs / "train-1-single-0.log").write_text(f"this is {airflow_id}\n")
    return ids


def test_logs_take_the_catalog_id_or_the_airflow_run_id(cli: Cli, runs: dict[str, int]) -> None:
    for reference in (str(runs["manual__old"]), f"#{runs['manual__old']}", "manual__old"):
        shown = cli("task", "logs", "1", "--run", reference, "--node", "single-0")
        assert shown.exit_code == 0, shown.output
        assert shown.stdout == "this is manual__old\n"


def test_stop_takes_the_catalog_id(cli: Cli, runs: dict[str, int]) -> None:
    stopped = cli("task", "stop", "1", "--run", str(runs["manual__new"]), "--json")
    assert stopped.exit_code == 0, stopped.output
    shown = json.loads(stopped.stdout)
    assert (shown["run"], shown["run_id"]) == (runs["manual__new"], "manual__new")


@pytest.mark.parametrize("command", [["logs"], ["stop"]])
def test_an_unknown_run_names_both_forms_and_the_recent_runs(
    cli: Cli, runs: dict[str, int], command: list[str]
) -> None:
    refused = cli("task", *command, "1", "--run", "999")
    assert refused.exit_code == 1
    assert refused.stderr.splitlines() == [
        "error: training task 1 has no run '999': --run takes a run's catalog id (23 or #23; "
        "the id of GET /tasks/1/runs) or its Airflow run id; its recent runs:",
        f"  #{runs['manual__new']}  manual__new  running",
        f"  #{runs['manual__old']}  manual__old  failed",
    ]


def test_task_status_shows_both_names_of_each_run(cli: Cli, runs: dict[str, int]) -> None:
    table = cli("task", "status", "1").stdout.splitlines()
    cells = [re.split(r"\s{3,}", line.strip()) for line in table]
    assert [str(runs["manual__old"]), "manual__old", "failed"] in [row[:3] for row in cells]
    header = next(line for line in table if "AIRFLOW RUN ID" in line)
    assert re.split(r"\s{3,}", header)[:3] == ["ID", "AIRFLOW RUN ID", "STATE"]
