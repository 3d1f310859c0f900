"""The admission claims in the catalog (``octotrain.catalog.admissions``), on SQLite and
PostgreSQL: asked once, admitted by settling, released when every node ended or the run did,
and never overfilled by settlers at once."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from hooks.storage.catalog import CatalogHook
from octotrain.admission import Capacity, Demand, ProjectQuota
from octotrain.catalog.admissions import (
    claim_state,
    is_admitted,
    request_admission,
    settle_admissions,
)
from octotrain.catalog.models import AdmissionClaim, NodeHold, Run, RunState
from octotrain.storage import ObjectStore
from tests.factories import running_runs, seed

T0 = datetime(2026, 12, 6, 9, 0, tzinfo=UTC)
TWO_CORES = Capacity(nodes=32, cores=2, memory_mib=65536)


def _runs(catalog: CatalogHook, store: ObjectStore, count: int) -> list[int]:
    return running_runs(catalog, seed(catalog, store).task_id, count)


def _ask(catalog: CatalogHook, run_id: int, *, nodes: int = 2, at: int = 0) -> None:
    with catalog.session() as session:
        request_admission(
            session,
            run_id=run_id,
            project="demo",
            priority=0,
            demand=Demand.of(nodes=nodes, cores_per_node=1, memory_mib_per_node=512),
            now=T0 + timedelta(seconds=at),
        )


def _settle(catalog: CatalogHook, capacity: Capacity = TWO_CORES) -> list[int]:
    with catalog.session() as session:
        return settle_admissions(session, capacity, now=datetime.now(UTC))


def test_a_claim_waits_with_its_reason_until_the_run_before_it_has_ended_every_node(
    catalog: CatalogHook, store: ObjectStore
) -> None:
    first, second = _runs(catalog, store, 2)
    _ask(catalog, first)
    _ask(catalog, first)  # a stage tried again keeps its one claim
    _ask(catalog, second, at=1)
    assert _settle(catalog) == [first]
    with catalog.session() as session:
        assert session.query(AdmissionClaim).count() == 2
        assert is_admitted(session, first) and not is_admitted(session, second)
        state = claim_state(session, second, TWO_CORES)
    assert state is not None and state.place is not None and state.admitted_at is None
    assert (state.place.position, state.place.reason) == (
        1, "waiting for this machine: 0 of 2 cores free, the run needs 2 cores"
    )  # fmt: skip
    with catalog.session() as session:  # one of the first run's nodes ends: it still holds
        session.add(NodeHold(run_id=first, node_index="0", started_at=T0, ended_at=T0))
    assert _settle(catalog) == []
    with catalog.session() as session:
        session.add(NodeHold(run_id=first, node_index="1", started_at=T0, ended_at=T0))
    assert _settle(catalog) == [second]
    with catalog.session() as session:
        state = claim_state(session, second, TWO_CORES)
    assert state is not None and state.place is None and state.admitted_at is not None


def test_a_run_that_ended_without_its_nodes_saying_so_frees_its_room(
    catalog: CatalogHook, store: ObjectStore
) -> None:
    first, second = _runs(catalog, store, 2)
    _ask(catalog, first)
    _ask(catalog, second, at=1)
    assert _settle(catalog) == [first]
    with catalog.session() as session:
        run = session.get(Run, first)
        assert run is not None
        run.state = RunState.FAILED  # its worker was lost; Airflow marked it failed
    assert _settle(catalog) == [second]


def test_settlers_at_once_never_admit_past_the_room(
    catalog: CatalogHook, store: ObjectStore
) -> None:
    runs = _runs(catalog, store, 12)
    for at, run_id in enumerate(runs):
        _ask(catalog, run_id, nodes=1, at=at)
    capacity = Capacity(32, 3, 65536, {"demo": ProjectQuota(nodes=3)})
    admitted: list[int] = []
    errors: list[BaseException] = []

    def settler() -> None:
        try:
            admitted.extend(_settle(catalog, capacity))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=settler) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(admitted) == runs[:3]
