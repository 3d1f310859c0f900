"""When each node of a run held its resources, as the launchers saw it: the fact that usage
accounting bills (``octotrain.catalog.accounting``).

The local launcher records a node's hold when its process starts and when it ends; the
Kubernetes launcher records it from the pod's own status (started on its Kubernetes node, its
containers' end) when the pod has ended. A node tried again after a lost worker keeps one hold
(one row per run and node): the earliest start and the latest end stay.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from octotrain.catalog.models import NodeHold, as_utc


def record_hold(
    session: Session,
    *,
    run_id: int,
    node_index: str,
    started_at: datetime,
    ended_at: datetime | None = None,
) -> NodeHold:
    """Record that node ``node_index`` of run ``run_id`` held its resources from ``started_at``
    (to ``ended_at``, None while it still holds them), merged with what was recorded before."""
    hold = _find(session, run_id, node_index)
    if hold is None:
        hold = NodeHold(run_id=run_id, node_index=node_index, started_at=started_at)
        try:
            with session.begin_nested():
                session.add(hold)
        except IntegrityError:  # another try of the node recorded it meanwhile
            found = _find(session, run_id, node_index)
            assert found is not None
            hold = found
    if as_utc(started_at) < as_utc(hold.started_at):
        hold.started_at = started_at
    if ended_at is not None and (hold.ended_at is None or as_utc(ended_at) > as_utc(hold.ended_at)):
        hold.ended_at = ended_at
    session.flush()
    return hold


def record_release(session: Session, *, run_id: int, node_index: str, ended_at: datetime) -> bool:
    """The node's resources were released at ``ended_at``; False when it never held any."""
    hold = _find(session, run_id, node_index)
    if hold is None:
        return False
    record_hold(
        session,
        run_id=run_id,
        node_index=node_index,
        started_at=hold.started_at,
        ended_at=ended_at,
    )
    return True


def node_hours_of_runs(session: Session, run_ids: list[int], *, now: float) -> dict[int, float]:
    """Each run's node-hours so far, as usage accounting bills them (a node still holding its
    resources counts until ``now``, seconds since the epoch)."""
    hours: dict[int, float] = dict.fromkeys(run_ids, 0.0)
    if not run_ids:
        return hours
    for hold in session.scalars(select(NodeHold).where(NodeHold.run_id.in_(run_ids))):
        end = as_utc(hold.ended_at).timestamp() if hold.ended_at else now
        hours[hold.run_id] += max(0.0, end - as_utc(hold.started_at).timestamp()) / 3600
    return hours


def _find(session: Session, run_id: int, node_index: str) -> NodeHold | None:
    return session.scalars(
        select(NodeHold).where(NodeHold.run_id == run_id, NodeHold.node_index == node_index)
    ).one_or_none()
