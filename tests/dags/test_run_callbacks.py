"""A run Airflow ends failed ends failed in the catalog too, whatever stage was cut short."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from sqlalchemy import select

from dags.factory import build_all_dags
from dags.run_callbacks import end_catalog_run_failed
from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog.models import Run, RunState
from octotrain.contracts import dag_id_for
from tests.factories import seed


def _run(catalog: CatalogHook, task_id: int, run_id: str, state: RunState) -> None:
    with catalog.session() as session:
        session.add(Run(task_id=task_id, airflow_run_id=run_id, state=state, node_count=1))


def _state(catalog: CatalogHook, run_id: str) -> tuple[RunState, str]:
    with catalog.session() as session:
        run = session.scalars(select(Run).where(Run.airflow_run_id == run_id)).one()
        return run.state, run.message


def test_an_active_run_ends_failed_with_airflows_reason_and_an_ended_one_keeps_its_end(
    catalog: CatalogHook, store: LocalFolderStore, octotrain_env: Path
) -> None:
    demo = seed(catalog, store)
    dag = build_all_dags(catalog.url)[dag_id_for(demo.task_id)]
    assert dag.on_failure_callback == end_catalog_run_failed
    _run(catalog, demo.task_id, "manual__cut-short", RunState.RUNNING)
    _run(catalog, demo.task_id, "manual__stopped", RunState.STOPPED)
    for run_id in ("manual__cut-short", "manual__stopped"):
        end_catalog_run_failed(
            {
                "dag_run": SimpleNamespace(dag_id=dag.dag_id, run_id=run_id),
                "reason": "task_failure",
            }
        )
    assert _state(catalog, "manual__cut-short") == (
        RunState.FAILED,
        "Airflow ended the run failed: task_failure",
    )
    assert _state(catalog, "manual__stopped")[0] == RunState.STOPPED
