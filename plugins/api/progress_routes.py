"""Where a run is, over REST: each node's phase (waiting, staging, training, uploading, done),
its percent (staging's bytes, or the training's progress against its total) and an estimate
of the seconds left, and the same for the run (its least advanced nodes, its slowest node's
estimate). The rules are ``octotrain/node_progress.py``'s; ``null`` means "not known yet",
never a guess.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends
from pydantic import BaseModel

from hooks.launchers import progress_of
from hooks.run_admission import queue_state
from hooks.storage.catalog import default_catalog
from octotrain.admission import QueueState
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


class AdmissionView(BaseModel):
    """Where the run stands in its queue (this machine's admission, or Kueue's on a cluster):
    ``position`` (1: next) and ``reason`` while it waits, ``admitted_at`` (epoch seconds) once
    admitted; ``waited_seconds`` until then, or until now; ``in_words`` all of it as the
    console and the CLI say it."""

    queue: str
    asked: str
    position: int | None
    reason: str
    requested_at: float
    admitted_at: float | None
    waited_seconds: float
    in_words: str

    @classmethod
    def of(cls, state: QueueState, *, now: datetime) -> AdmissionView:
        return cls(
            queue=state.queue,
            asked=state.asked,
            position=state.position,
            reason=state.reason,
            requested_at=state.requested_at.timestamp(),
            admitted_at=state.admitted_at.timestamp() if state.admitted_at else None,
            waited_seconds=round(state.waited_seconds(now), 1),
            in_words=state.in_words(now),
        )


class RunProgressView(BaseModel):
    """``live`` while the run may still move; ``as_of``: when this was read (epoch seconds);
    ``admission``: its place in its queue (null where no queue admits runs, or before the run
    asked)."""

    live: bool
    as_of: float
    phase: str
    percent: float | None
    eta_seconds: float | None
    nodes: list[NodeProgressView]
    admission: AdmissionView | None = None


@router.get("/tasks/{task_id}/runs/{run_id}/progress", summary="The run's phase, percent, ETA")
def run_progress_view(task_id: TaskId, run_id: RunId, scope: CurrentScope) -> RunProgressView:
    now = time.time()
    with default_catalog().session() as session:
        run = Tasks(session, scope).run(task_id, run_id)
        live = run.state in ACTIVE_RUN_STATES
        progress = progress_of(run, now=now)
        queued = queue_state(run)
    view = view_of(progress, live=live, as_of=now)
    if queued is not None:
        view.admission = AdmissionView.of(queued, now=datetime.fromtimestamp(now, UTC))
    return view


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
