"""The local launcher's admission claims (``octotrain.admission`` has the rule): asked for once
per run, settled by whoever may have made room, read by every surface that says why a run
waits.

Settling reads every open claim and admits some, so two settlers at once could each admit a
run into the same room: the first statement of a settling takes the table's write lock
(PostgreSQL: ``LOCK TABLE``; SQLite: a write that changes nothing), and the next settler waits
for its commit. A claim stops holding when every node of its run has ended (its node holds,
``octotrain.catalog.node_holds``) or its run is no longer active, whatever ended it: a worker
that died without a word frees its run's room once the run is marked ended.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from octotrain.admission import Capacity, Claim, Demand, Waiting, place_of, settle
from octotrain.catalog.models import AdmissionClaim, NodeHold, Run, as_utc
from octotrain.run_lifecycle import ACTIVE_RUN_STATES


@dataclass(frozen=True)
class ClaimState:
    """A run's claim as its pages show it: what it asked for, since when it waits (or waited),
    when it was admitted, and while it waits its place and why."""

    demand: Demand
    requested_at: datetime
    admitted_at: datetime | None
    place: Waiting | None


def request_admission(
    session: Session, *, run_id: int, project: str, priority: int, demand: Demand, now: datetime
) -> None:
    """Ask for run ``run_id``'s nodes (once: a stage tried again keeps its first claim)."""
    _lock(session)
    if _claim_of(session, run_id) is None:
        session.add(
            AdmissionClaim(
                run_id=run_id,
                project=project,
                priority=priority,
                nodes=demand.nodes,
                cores=demand.cores,
                memory_mib=demand.memory_mib,
                requested_at=now,
            )
        )
        session.flush()


def settle_admissions(session: Session, capacity: Capacity, *, now: datetime) -> list[int]:
    """Release the claims whose runs are done with their room, admit the waiting claims that
    fit now; the run ids admitted."""
    _lock(session)
    open_claims = _release_ended(session, now=now)
    settling = settle([_claim(row) for row in open_claims], capacity)
    admitted = {claim.run_id for claim in settling.admit}
    for row in open_claims:
        if row.run_id in admitted:
            row.admitted_at = now
    session.flush()
    return sorted(admitted)


def is_admitted(session: Session, run_id: int) -> bool:
    """Whether run ``run_id`` may start its nodes (a run without a claim never asked: yes)."""
    row = _claim_of(session, run_id)
    return row is None or row.admitted_at is not None


def claim_state(session: Session, run_id: int, capacity: Capacity) -> ClaimState | None:
    """Run ``run_id``'s claim, with its place while it waits; None when it made none."""
    row = _claim_of(session, run_id)
    if row is None:
        return None
    place = None
    if row.admitted_at is None:
        open_claims = session.scalars(
            select(AdmissionClaim).where(AdmissionClaim.released_at.is_(None))
        ).all()
        place = place_of(run_id, [_claim(each) for each in open_claims], capacity)
    return ClaimState(
        demand=Demand(row.nodes, row.cores, row.memory_mib),
        requested_at=as_utc(row.requested_at),
        admitted_at=as_utc(row.admitted_at) if row.admitted_at else None,
        place=place,
    )


def _release_ended(session: Session, *, now: datetime) -> list[AdmissionClaim]:
    """Mark released the open claims whose run ended or whose nodes all ended; the others."""
    rows = session.scalars(select(AdmissionClaim).where(AdmissionClaim.released_at.is_(None))).all()
    if not rows:
        return []
    run_ids = [row.run_id for row in rows]
    active = set(
        session.scalars(select(Run.id).where(Run.id.in_(run_ids), Run.state.in_(ACTIVE_RUN_STATES)))
    )
    ended_nodes = dict(
        session.execute(
            select(NodeHold.run_id, func.count())
            .where(NodeHold.run_id.in_(run_ids), NodeHold.ended_at.is_not(None))
            .group_by(NodeHold.run_id)
        ).all()
    )
    still_open = []
    for row in rows:
        done = row.admitted_at is not None and ended_nodes.get(row.run_id, 0) >= row.nodes
        if row.run_id not in active or done:
            row.released_at = now
        else:
            still_open.append(row)
    return still_open


def _claim(row: AdmissionClaim) -> Claim:
    return Claim(
        run_id=row.run_id,
        project=row.project,
        priority=row.priority,
        demand=Demand(row.nodes, row.cores, row.memory_mib),
        requested_at=as_utc(row.requested_at),
        admitted_at=as_utc(row.admitted_at) if row.admitted_at else None,
    )


def _claim_of(session: Session, run_id: int) -> AdmissionClaim | None:
    return session.scalars(
        select(AdmissionClaim).where(AdmissionClaim.run_id == run_id)
    ).one_or_none()


def _lock(session: Session) -> None:
    """Take the claims' write lock until this transaction ends (see the module's docstring)."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("LOCK TABLE admission_claims IN SHARE ROW EXCLUSIVE MODE"))
    else:
        session.execute(text("UPDATE admission_claims SET id = id WHERE 0 = 1"))
