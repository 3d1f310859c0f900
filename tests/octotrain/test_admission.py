"""The local launcher's admission rule (``octotrain.admission``): a run's nodes all at once or
none, in priority order, best effort behind a blocked claim, fair between projects, never past
the machine or a project's quota, and never stuck while something would fit."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from octotrain.admission import (
    Capacity,
    Claim,
    Demand,
    ProjectQuota,
    place_of,
    settle,
    too_large,
)

T0 = datetime(2026, 12, 6, 9, 0, tzinfo=UTC)
MACHINE = Capacity(nodes=32, cores=8, memory_mib=16384)


def _claim(
    run_id: int,
    nodes: int,
    *,
    project: str = "a",
    priority: int = 0,
    cores: float = 1,
    admitted: bool = False,
) -> Claim:
    return Claim(
        run_id=run_id,
        project=project,
        priority=priority,
        demand=Demand.of(nodes=nodes, cores_per_node=cores, memory_mib_per_node=512),
        requested_at=T0 + timedelta(seconds=run_id),
        admitted_at=T0 if admitted else None,
    )


def test_a_run_is_admitted_whole_or_waits_whole_with_the_numbers() -> None:
    held = _claim(1, 6, admitted=True)
    waiting = _claim(2, 4)
    settling = settle([held, waiting], MACHINE)
    assert settling.admit == []
    [place] = settling.waiting
    assert (place.run_id, place.position) == (2, 1)
    assert place.reason == "waiting for this machine: 2 of 8 cores free, the run needs 4 cores"


def test_higher_priority_goes_first_and_a_blocked_claim_does_not_block_smaller_ones() -> None:
    held = _claim(1, 4, admitted=True)
    big_high = _claim(2, 6, priority=10)
    small_low = _claim(3, 2, priority=-5)
    young_high = _claim(4, 2, priority=10)
    settling = settle([held, big_high, small_low, young_high], MACHINE)
    # 4 of 8 cores were free: the young high one first, then the low one that still fits
    assert [claim.run_id for claim in settling.admit] == [4, 3]
    assert [(place.run_id, place.position) for place in settling.waiting] == [(2, 1)]
    settling = settle([_claim(1, 6, admitted=True), big_high, young_high, small_low], MACHINE)
    assert [claim.run_id for claim in settling.admit] == [4]


def test_a_project_s_quota_is_never_exceeded_and_is_named_in_the_reason() -> None:
    capacity = Capacity(32, 64, 65536, {"a": ProjectQuota(nodes=4)})
    settling = settle([_claim(1, 3, admitted=True), _claim(2, 2), _claim(3, 2, project="b")],
                      capacity)  # fmt: skip
    assert [claim.run_id for claim in settling.admit] == [3]
    assert settling.waiting[0].reason == (
        "waiting for project a's quota: 1 of 4 nodes free, the run needs 2 nodes"
    )


def test_projects_share_the_machine_by_their_weights() -> None:
    """Equal priority: the project holding least against its weight is admitted next."""
    capacity = Capacity(32, 6, 65536, {"a": ProjectQuota(weight=2), "b": ProjectQuota()})
    claims = [_claim(n, 1, project="a") for n in range(1, 20)]
    claims += [_claim(n, 1, project="b") for n in range(20, 40)]
    admitted = settle(claims, capacity).admit
    held = {project: sum(claim.project == project for claim in admitted) for project in "ab"}
    assert held == {"a": 4, "b": 2}


def test_a_run_too_large_for_the_machine_or_its_quota_is_refused_with_the_numbers() -> None:
    capacity = Capacity(32, 8, 16384, {"a": ProjectQuota(nodes=2)})
    four = Demand.of(nodes=4, cores_per_node=1, memory_mib_per_node=512)
    assert too_large(four, "b", capacity) is None
    assert too_large(four, "a", capacity) == (
        "the run needs 4 nodes at once and project a's quota is 2 nodes: it could never start "
        "all its nodes together"
    )
    memory = Demand.of(nodes=2, cores_per_node=1, memory_mib_per_node=10240)
    assert too_large(memory, "b", capacity) == (
        "the run needs 20 GiB of memory at once and this machine has 16 GiB of memory: it could "
        "never start all its nodes together"
    )


def test_a_waiting_run_s_place_counts_the_runs_admitted_at_the_next_settling() -> None:
    claims = [_claim(1, 8, admitted=True), _claim(2, 2, priority=5), _claim(3, 2)]
    assert place_of(3, claims, MACHINE) is not None
    assert place_of(3, claims, MACHINE).position == 2  # type: ignore[union-attr]
    free = [_claim(2, 2)]
    assert place_of(2, free, MACHINE) == place_of(2, free, MACHINE)
    assert place_of(2, free, MACHINE).fits_now  # type: ignore[union-attr]
    assert place_of(1, claims, MACHINE) is None  # admitted


def test_bursts_never_overfill_never_start_in_part_and_never_stall() -> None:
    """Random bursts of 1-, 2- and 4-node runs of two projects, admitted and ended in turn."""
    rng = random.Random(36)
    capacity = Capacity(6, 8, 8192, {"a": ProjectQuota(cores=6), "b": ProjectQuota(nodes=4)})
    for _burst in range(50):
        claims = [
            _claim(n, rng.choice([1, 2, 4]), project=rng.choice("ab"),
                   priority=rng.randint(-2, 2), cores=rng.choice([0.5, 1, 1.5]))
            for n in range(1, 30)
        ]  # fmt: skip
        while claims:
            settling = settle(claims, capacity)
            admitted_now = {claim.run_id for claim in settling.admit}
            claims = [
                Claim(**vars(claim) | {"admitted_at": T0}) if claim.run_id in admitted_now
                else claim for claim in claims
            ]  # fmt: skip
            held = [claim for claim in claims if claim.admitted_at is not None]
            assert held, "nothing admitted while runs wait, each fitting alone"
            assert sum(claim.demand.cores for claim in held) <= capacity.cores
            assert sum(claim.demand.nodes for claim in held) <= capacity.nodes
            for project, quota in capacity.quotas.items():
                mine = [claim.demand for claim in held if claim.project == project]
                assert quota.cores is None or sum(d.cores for d in mine) <= quota.cores
                assert quota.nodes is None or sum(d.nodes for d in mine) <= quota.nodes
            ended = rng.choice(held)  # one run ends, freeing its room
            claims.remove(ended)


def test_across_projects_fair_sharing_comes_before_priority_as_in_a_kueue_cohort() -> None:
    """Project b holds 4 cores: a's low-priority run goes before b's high-priority one."""
    held = _claim(1, 4, project="b", admitted=True)
    b_high, a_low = _claim(2, 4, project="b", priority=10), _claim(3, 4, project="a", priority=-5)
    settling = settle([held, b_high, a_low], MACHINE)
    assert [claim.run_id for claim in settling.admit] == [3]
    assert [place.run_id for place in settling.waiting] == [2]


def test_a_project_over_its_fair_share_does_not_take_room_a_project_under_it_waits_for() -> None:
    """Weights 2:1 on 6 cores (fair shares 4 and 2): b holds 2 and a holds 2 (under its 4) and
    waits with a 4-core run for the 2 free cores; b's 1-core run would fit, but would take b
    past its share while a waits: it waits too, and says for whom."""
    capacity = Capacity(32, 6, 65536, {"a": ProjectQuota(weight=2), "b": ProjectQuota()})
    claims = [_claim(1, 2, project="a", admitted=True), _claim(2, 2, project="b", admitted=True),
              _claim(3, 4, project="a"), _claim(4, 1, project="b")]  # fmt: skip
    settling = settle(claims, capacity)
    assert settling.admit == []
    assert [place.reason for place in settling.waiting] == [
        "waiting for this machine: 2 of 6 cores free, the run needs 4 cores",
        "waiting for project a to be admitted first: it holds less than its fair share (4 "
        "cores), and this run would take more than project b's (2 cores)",
    ]
    # Within its share a project is never held back: b with 1 core held takes its second.
    claims[1] = _claim(2, 1, project="b", admitted=True)
    assert [claim.run_id for claim in settle(claims, capacity).admit] == [4]
