"""The plugin's REST API, mounted in Airflow's api-server under ``/octotrain``.

Plugin apps are anonymous unless they ask for a user: every route here depends on Airflow's
``get_user`` (the same JWT as Airflow's own REST API and UI, by header or session cookie).
"""

from __future__ import annotations

from typing import Annotated, Any

from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends, FastAPI, HTTPException
from sqlalchemy import select

from hooks.catalog import default_catalog
from octotrain.catalog.models import ModelVersion, Project, Run, TrainingTask

URL_PREFIX = "/octotrain"

router = APIRouter(prefix="/api/v1", dependencies=[Depends(get_user)])
User = Annotated[BaseUser, Depends(get_user)]


def _run_summary(run: Run) -> dict[str, Any]:
    version: ModelVersion | None = run.model_version
    return {
        "id": run.id,
        "airflow_run_id": run.airflow_run_id,
        "state": run.state.value,
        "node_count": run.node_count,
        "message": run.message,
        "triggered_by": run.triggered_by,
        "started_at": run.started_at.isoformat(),
        "ended_at": run.ended_at.isoformat() if run.ended_at else None,
        "model_version": version.version if version else None,
    }


@router.get("/tasks", summary="Training tasks with the state of their last run")
def list_tasks(user: User) -> list[dict[str, Any]]:
    with default_catalog().session() as session:
        rows = session.execute(
            select(TrainingTask, Project.name).join(Project).order_by(TrainingTask.id)
        ).all()
        return [
            {
                "id": task.id,
                "project": project,
                "name": task.name,
                "description": task.description,
                "node_count": task.spec.get("node_count", 1),
                "priority": task.spec.get("priority", 0),
                "algorithm": task.spec.get("algorithm"),
                "model_repository": task.spec.get("model_repository"),
                "last_run": _run_summary(task.runs[-1]) if task.runs else None,
            }
            for task, project in rows
        ]


@router.get("/tasks/{task_id}/runs", summary="The runs of one training task")
def list_runs(task_id: int, user: User) -> list[dict[str, Any]]:
    with default_catalog().session() as session:
        task = session.get(TrainingTask, task_id)
        if task is None:
            raise HTTPException(status_code=404, detail=f"training task {task_id} not found")
        return [_run_summary(run) for run in task.runs]


def create_app() -> FastAPI:
    app = FastAPI(
        title="Octotrain",
        description="Training tasks, their runs and model versions.",
        version="1",
    )
    app.include_router(router)
    return app
