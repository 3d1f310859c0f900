"""``octotrain usage``: a project's month per task, a task's runs, one run; bad options refused
naming them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hooks.storage.catalog import CatalogHook
from octotrain.catalog.models import Run, RunState
from octotrain.catalog.node_holds import record_hold
from tests.cli.conftest import Cli
from tests.plan_rows import recorded

START = datetime(2026, 11, 30, 23, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


@pytest.fixture
def billed_run(cli: Cli, catalog: CatalogHook) -> int:
    """A one-node run of the demo task (id 1) with 2 CPUs and no GPU, holding them from 23:00
    on 30 November to 01:00 on 1 December 2026."""
    with catalog.session() as session:
        resources = {"spec": "cpu", "kind": "cce", "cpu": 2.0, "memory_mib": 512, "gpu_count": 0}
        run = Run(
            task_id=1, airflow_run_id="manual__billed", state=RunState.SUCCESS, node_count=1,
            plan=recorded(resources=resources), started_at=START, ended_at=START + 2 * HOUR,
        )  # fmt: skip
        session.add(run)
        session.flush()
        record_hold(
            session, run_id=run.id, node_index="single-0", started_at=START,
            ended_at=START + 2 * HOUR,
        )  # fmt: skip
        return run.id


def test_a_project_s_month_is_its_part_of_a_run_across_months(cli: Cli, billed_run: int) -> None:
    november = cli.json("usage", "--project", "demo", "--month", "2026-11")
    assert november["total"]["node_hours"] == pytest.approx(1)
    assert november["total"]["cpu_hours"] == pytest.approx(2)
    assert november["total"]["gpu_hours"] == 0
    table = cli("usage", "-p", "demo", "-m", "2026-12")
    assert table.exit_code == 0, table.output
    assert "demo, 2026-12 (UTC)" in table.stdout
    assert "TOTAL" in table.stdout and "2.00" in table.stdout  # its CPU-hours in December


def test_a_task_s_runs_and_one_run(cli: Cli, billed_run: int) -> None:
    runs = cli.json("usage", "--task", "1")
    assert [row["run_id"] for row in runs["runs"]] == [billed_run]
    assert runs["total"]["node_hours"] == pytest.approx(2)
    one = cli.json("usage", "--task", "1", "--run", "manual__billed")
    assert one["usage"]["training_hours"] == pytest.approx(2)


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--project", "demo", "--month", "2026-13"], "month"),
        (["--project", "demo", "--task", "1"], "project"),
        ([], "project"),
        (["--run", "1"], "run"),
    ],
)
def test_bad_options_are_refused_naming_them(cli: Cli, args: list[str], field: str) -> None:
    result = cli("usage", *args)
    assert result.exit_code == 1
    assert f"  {field}: " in result.stderr
    assert "nothing was saved" not in result.stderr  # a read saves nothing to begin with


def test_an_unknown_project_is_refused(cli: Cli) -> None:
    result = cli("usage", "--project", "nope")
    assert (result.exit_code, result.stderr.strip()) == (1, "error: project 'nope' not found")
