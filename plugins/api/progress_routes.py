"""Where a run is, over REST: each node's phase (waiting, staging, training, uploading, done),
its percent (staging's bytes, or the training's progress against its total) and an estimate
of the seconds left, and the same for the run (its least advanced nodes, its slowest node's
estimate). The rules are ``octotrain/node_progress.py``'s; ``null`` means "not known yet",
never a guess.
"""

from __future__ import annotations

import time

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends
from pydantic import BaseModel

from hooks.catalog import default_catalog
from hooks.run_progress import progress_of
from octotrain.node_progress import NodeProgress, RunProgress
from octotrain.run_lifecycle import ACTIVE_RUN_STATES
from octotrain.tasks import Tasks
from plugins.api.auth import CurrentScope
from plugins.api.task_routes import RunId, TaskId

# Airflow's login on every route of this file (app.py requires it router-wide too).
router = APIRouter(tags=["progress"], dependencies=[Depends(get_user)])


class NodeProgressView(BaseModel):
    """``since``: when the phase began (epoch seconds); ``current``/``total``: the training's
    own numbers; ``bytes_done``/``bytes_total``: staging's."""

    node: str
    phase: str
    since: float | None
    percent: float | None
    eta_seconds: float | None
    current: float | None
    total: float | None
    bytes_done: int | None
    bytes_total: int | None


class RunProgressView(BaseModel):
    """``live`` while the run may still move; ``as_of``: when this was read (epoch seconds)."""

    live: bool
    as_of: float
    phase: str
    percent: float | None
    eta_seconds: float | None
    nodes: list[NodeProgressView]


@router.get("/tasks/{task_id}/runs/{run_id}/progress", summary="The run's phase, percent, ETA")
def run_progress_view(task_id: TaskId, run_id: RunId, scope: CurrentScope) -> RunProgressView:
    now = time.time()
    with default_catalog().session() as session:
        run = Tasks(session, scope).run(task_id, run_id)
        live = run.state in ACTIVE_RUN_STATES
        progress = progress_of(run, now=now)
    return view_of(progress, live=live, as_of=now)


def view_of(progress: RunProgress, *, live: bool, as_of: float) -> RunProgressView:
    return RunProgressView(
        live=live,
        as_of=as_of,
        phase=str(progress.phase),
        percent=progress.percent,
        eta_seconds=progress.eta_seconds,
        nodes=[_node(node) for node in progress.nodes],
    )


def _node(node: NodeProgress) -> NodeProgressView:
    return NodeProgressView(**vars(node) | {"phase": str(node.phase)})
