"""``--run`` of the commands about one run (``task logs``, ``task stop``). A run has two names:
the catalog's id (the ``id`` of ``GET /tasks/{id}/runs`` and of ``octotrain task status``)
and Airflow's run id (``manual__…``); the REST API takes the first, Airflow's
UI shows the second, so ``--run`` takes either (the catalog's id also as the console writes it,
``#23``), and a miss says so."""

from __future__ import annotations

from collections.abc import Sequence

from octotrain.catalog.models import Run
from octotrain.errors import NotFound

RUN_HELP = "The run: its catalog id (23 or #23, as the console names it) or its Airflow run id"
RECENT_RUNS = 5


def run_named(runs: Sequence[Run], reference: str, *, task_id: int) -> Run:
    """The run of ``runs`` (one task's) that ``reference`` names: its Airflow run id, or else
    its catalog id (an Airflow run id is free text, so it may be a number too)."""
    found = next((run for run in runs if run.airflow_run_id == reference), None)
    number = reference.removeprefix("#")
    if found is None and number.isdecimal():
        found = next((run for run in runs if run.id == int(number)), None)
    if found is None:
        raise NotFound(_no_such_run(runs, reference, task_id))
    return found


def _no_such_run(runs: Sequence[Run], reference: str, task_id: int) -> str:
    intro = (
        f"training task {task_id} has no run '{reference}': --run takes a run's catalog id "
        f"(23 or #23; the id of GET /tasks/{task_id}/runs) or its Airflow run id"
    )
    if not runs:
        return f"{intro}; it has no runs yet"
    recent = [f"  #{run.id}  {run.airflow_run_id}  {run.state}" for run in runs[::-1][:RECENT_RUNS]]
    return "\n".join([f"{intro}; its recent runs:", *recent])
