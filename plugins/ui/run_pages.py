"""The console's page of one run of a training task (``/ui/tasks/{task_id}/runs/{run_id}``):
what it ran with, read from the plan ``validate`` recorded (parameters and variables, secrets
masked; nodes; resource spec; the data versions it read), how it went (state, timings, why it
failed or who stopped it, the model version it made, the run it resumed and those that resumed
it), Stop (while active) and Resume (where it left a checkpoint), each asked first, and links
to its Metrics, Resources and Logs tabs and to its DAG run in Airflow. Its phase (the stage
running now), its conf and Airflow's note on it are read by ``run.js`` from Airflow's own REST
API with the user's session, so that the page shows what Airflow shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import quote

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends, Request
from fastapi import Path as PathParameter
from fastapi.responses import HTMLResponse

from hooks.runs.run_resume import why_not_resumed
from hooks.storage.catalog import default_catalog
from hooks.storage.object_store import default_object_store
from octotrain.catalog.accounting import Accounting
from octotrain.catalog.models import Sweep
from octotrain.catalog.views import RunView, TaskView
from octotrain.planning import RunPlan, recorded_plan
from octotrain.run_lifecycle import ACTIVE_RUN_STATES
from octotrain.task_spec import MAX_VERSION_NUMBER
from octotrain.tasks import Tasks
from plugins.api.auth import CurrentScope
from plugins.ui.pages import render
from plugins.ui.task_shown import data_label, model_label

TaskId = Annotated[int, PathParameter(ge=1, le=MAX_VERSION_NUMBER)]
RunId = Annotated[int, PathParameter(ge=1, le=MAX_VERSION_NUMBER)]

# Airflow's login on every route of this file (app.py requires it router-wide too).
router = APIRouter(prefix="/ui", include_in_schema=False, dependencies=[Depends(get_user)])


@dataclass(frozen=True)
class RunSettings:
    """What a run was launched with, as ``validate`` planned it; ``planned`` is False for a run
    Airflow has not started validating yet (then there is nothing else to show)."""

    planned: bool
    nodes: list[str]
    resources: dict[str, Any]
    priority: int | None
    parameters: dict[str, Any]
    env: dict[str, str]
    data_inputs: list[str]
    input_models: list[str]
    mounts: list[str]
    image: str
    command: list[str]

    @classmethod
    def of(cls, plan: RunPlan | None) -> RunSettings:
        if plan is None:
            return cls(planned=False, nodes=[], resources={}, priority=None, parameters={},
                       env={}, data_inputs=[], input_models=[], mounts=[], image="",
                       command=[])  # fmt: skip
        lineage = plan.lineage
        return cls(
            planned=True,
            nodes=list(plan.node_indices),
            resources=plan.resources.model_dump(mode="json") if plan.resources else {},
            priority=plan.priority,
            parameters=dict(plan.parameters),
            env=dict(plan.env),
            data_inputs=[data_label(ref) for ref in lineage.get("data_inputs", [])],
            input_models=[model_label(ref) for ref in lineage.get("input_models", [])],
            mounts=[data_label(ref) for ref in lineage.get("mounts", [])],
            image=plan.image,
            command=list(plan.command),
        )


@router.get("/tasks/{task_id}/runs/{run_id}", response_class=HTMLResponse)
def run_page(task_id: TaskId, run_id: RunId, request: Request, scope: CurrentScope) -> HTMLResponse:
    """One run of a task of the user's projects (404 for another's, as the API answers)."""
    with default_catalog().session() as session:
        tasks = Tasks(session, scope)
        run = tasks.run(task_id, run_id)
        task = TaskView.of(tasks.get(task_id))
        view = RunView.of(run)
        settings = RunSettings.of(recorded_plan(run))
        usage = Accounting(session, scope).run_of(task_id, run_id)
        resumable = why_not_resumed(default_object_store(), run) is None
        resumed_by = tasks.resumed_by(task_id, run_id)
        # A sweep's trial names its sweep (of the same task, so visible to whoever sees the run).
        sweep = session.get(Sweep, run.sweep_id) if run.sweep_id is not None else None
        sweep_name = sweep.name if sweep is not None else None
    return render(
        "run.html",
        request,
        task=task,
        run=view,
        settings=settings,
        usage=usage,
        active=run.state in ACTIVE_RUN_STATES,
        resumable=resumable,
        resumed_by=resumed_by,
        sweep_name=sweep_name,
        dag_run_path=f"dags/{task.dag_id}/runs/{quote(view.airflow_run_id, safe='')}",
    )
