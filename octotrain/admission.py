"""All-or-nothing admission of runs on one machine (the local launcher): the rule itself.

A distributed run that starts some of its nodes while the rest wait for room holds what the
started ones use and trains nothing (each waits for its partners in the rendezvous); several
such runs deadlock a machine. So a run asks once for all its nodes together (its *claim*), and
is admitted only when the whole claim fits beside what the admitted runs hold: the machine's
cores, memory and node slots, and its project's quota (nodes and cores at once,
``config/local_quotas.toml``). This is what Kueue does for pod groups on a cluster, and its
rules are followed where they apply:

- order: the project holding the least against its weight first (fair sharing: a project's
  held cores divided by its weight, recounted after each admission), as Kueue's fair sharing
  orders the ClusterQueues of a cohort; within a project, higher priority first, then the
  oldest claim (a project is one queue, as a ClusterQueue is);
- best effort, as Kueue's default ``BestEffortFIFO`` queueing: a claim that does not fit does
  not block smaller ones behind it, so room rarely stays idle while a waiting run would fit;
- fair shares, as a Kueue cohort's nominal quotas: each project's share of the cores is its
  weight's part of the weights of the projects asking now; a project may take more than its
  share (borrow) only while no project under its share waits for room. Without this, the small
  runs of one project fill every bit of room that the larger runs of another wait for;
- a claim larger than the machine or its project's quota can never fit: it is refused before
  the run starts anything (``too_large``), never left waiting forever.

Nothing here reads a clock, a database or Airflow: ``octotrain.catalog.admissions`` keeps the
claims, ``hooks/local/local_admission.py`` knows the machine.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

MIB_PER_GIB = 1024
# Cores are counted in floats (0.5 a node): what a rounding error may add.
EPSILON = 1e-9
# How a reason for want of the machine's room begins (see ``_blocked``).
MACHINE_WAIT = "waiting for this machine"
# An amount in words: (amount, "nodes" | "cores" | "memory") -> "2 nodes", "1.5 GiB of memory".
AmountWords = Callable[[float, str], str]


@dataclass(frozen=True)
class Demand:
    """What a run holds while admitted: its nodes, and their cores and memory together."""

    nodes: int
    cores: float
    memory_mib: int

    @classmethod
    def of(cls, *, nodes: int, cores_per_node: float, memory_mib_per_node: int) -> Demand:
        return cls(nodes, nodes * cores_per_node, nodes * memory_mib_per_node)

    def __add__(self, other: Demand) -> Demand:
        return Demand(
            self.nodes + other.nodes, self.cores + other.cores, self.memory_mib + other.memory_mib
        )

    def in_words(self) -> str:
        return f"{_count(self.nodes, 'node')}, {_cores(self.cores)}, {_memory(self.memory_mib)}"


NOTHING = Demand(0, 0.0, 0)


@dataclass(frozen=True)
class ProjectQuota:
    """What one project's runs may hold at once (None: no bound), and its weight in fair
    sharing (a project of weight 2 gets twice the share of one of weight 1 under contention)."""

    nodes: int | None = None
    cores: float | None = None
    weight: float = 1.0


@dataclass(frozen=True)
class Capacity:
    """What the machine gives to admitted runs, and each project's quota (a project not
    listed has none and weight 1)."""

    nodes: int
    cores: float
    memory_mib: int
    quotas: dict[str, ProjectQuota] = field(default_factory=dict)

    def quota(self, project: str) -> ProjectQuota:
        return self.quotas.get(project, ProjectQuota())


@dataclass(frozen=True)
class Claim:
    """A run's request for all its nodes: waiting while ``admitted_at`` is None."""

    run_id: int
    project: str
    priority: int
    demand: Demand
    requested_at: datetime
    admitted_at: datetime | None = None


@dataclass(frozen=True)
class Waiting:
    """A waiting claim's place: ``position`` 1 is admitted next; ``reason`` in words (empty
    when it fits now and is admitted at the next settling)."""

    run_id: int
    position: int
    reason: str

    @property
    def fits_now(self) -> bool:
        return not self.reason


@dataclass(frozen=True)
class Settling:
    """The outcome of one pass of the rule: the claims to admit now, and every other waiting
    claim's place."""

    admit: list[Claim]
    waiting: list[Waiting]


def too_large(demand: Demand, project: str, capacity: Capacity) -> str | None:
    """Why a run of ``demand`` can never be admitted here, with the numbers; None when it can."""
    limits = [
        ("nodes", demand.nodes, capacity.nodes, "this machine runs", _count),
        ("cores", demand.cores, capacity.cores, "this machine has", _cores),
        ("memory", demand.memory_mib, capacity.memory_mib, "this machine has", _memory),
    ]
    found = next(
        (
            f"{words(asked, name)} at once and {whose} {words(limit, name)}"
            for name, asked, limit, whose, words in limits
            if asked > limit
        ),
        None,
    ) or beyond_quota(demand, project, capacity.quota(project))
    if found is None:
        return None
    return f"the run needs {found}: it could never start all its nodes together"


def beyond_quota(demand: Demand, project: str, quota: ProjectQuota) -> str | None:
    """The first bound of ``project``'s quota that ``demand`` is beyond, in words ("8 nodes at
    once and project demo's quota is 4 nodes"); None when it fits."""
    limits = [
        ("nodes", demand.nodes, quota.nodes, _count),
        ("cores", demand.cores, quota.cores, _cores),
    ]
    for name, asked, limit, words in limits:
        if limit is not None and asked > limit:
            whose = f"project {project}'s quota is"
            return f"{words(asked, name)} at once and {whose} {words(limit, name)}"
    return None


def settle(claims: Iterable[Claim], capacity: Capacity) -> Settling:
    """Which waiting claims to admit now beside the admitted ones, in the rule's order, and
    where every claim left waiting stands and why. First every claim that fits within its
    project's fair share, then those that would borrow beyond it, unless a project under its
    share waits for room."""
    claims = list(claims)
    held = [claim for claim in claims if claim.admitted_at is not None]
    state = _Room(capacity, fair_shares({claim.project for claim in claims}, capacity))
    for claim in held:
        state.take(claim)
    admit: list[Claim] = []
    starved: list[str] = []  # projects under their fair share whose claim found no room
    remaining = [claim for claim in claims if claim.admitted_at is None]
    for borrowing in (False, True):
        left: list[Claim] = []
        while remaining:  # the next in order, with the shares as this settling leaves them
            claim = min(remaining, key=state.order)
            remaining.remove(claim)
            reason = state.blocked(claim)
            if reason is None and state.borrows(claim):
                reason = state.lent_to(starved, claim) if borrowing else "borrows"
            if reason is None:
                admit.append(claim)
                state.take(claim)
                continue
            if reason.startswith(MACHINE_WAIT) and state.under_share(claim.project):
                starved.append(claim.project)
            left.append(claim)
        remaining = left
    waiting = []
    for claim in sorted(remaining, key=state.order):
        reason = state.blocked(claim) or state.lent_to(starved, claim) or ""
        waiting.append(Waiting(claim.run_id, len(waiting) + 1, reason))
    return Settling(admit, waiting)


class _Room:
    """What the admitted claims hold, in all and by project, as one settling goes on."""

    def __init__(self, capacity: Capacity, fair: dict[str, float]) -> None:
        self.capacity, self.fair = capacity, fair
        self.used = NOTHING
        self.by_project: dict[str, Demand] = defaultdict(lambda: NOTHING)

    def take(self, claim: Claim) -> None:
        self.used += claim.demand
        self.by_project[claim.project] += claim.demand

    def order(self, claim: Claim) -> tuple[float, int, datetime, int]:
        """Fair sharing first (what the claim's project holds against its weight), then
        priority within the project, then age."""
        held = self.by_project[claim.project].cores
        share = held / self.capacity.quota(claim.project).weight
        return (share, -claim.priority, claim.requested_at, claim.run_id)

    def blocked(self, claim: Claim) -> str | None:
        return _blocked(claim, self.used, self.by_project[claim.project], self.capacity)

    def borrows(self, claim: Claim) -> bool:
        taken = self.by_project[claim.project].cores + claim.demand.cores
        return taken > self.fair[claim.project] + EPSILON

    def under_share(self, project: str) -> bool:
        return self.by_project[project].cores < self.fair[project] - EPSILON

    def lent_to(self, starved: list[str], claim: Claim) -> str | None:
        """Why ``claim`` may not borrow: a project under its share waits for room."""
        first = next((other for other in starved if other != claim.project), None)
        if first is None or not self.borrows(claim):
            return None
        return (
            f"waiting for project {first} to be admitted first: it holds less than its fair "
            f"share ({_cores(self.fair[first])}), and this run would take more than project "
            f"{claim.project}'s ({_cores(self.fair[claim.project])})"
        )


def fair_shares(projects: Iterable[str], capacity: Capacity) -> dict[str, float]:
    """Each project's fair share of the machine's cores: its weight's part of the weights of
    the projects that hold or ask for room now. A project may take more (borrow what the others
    leave) only while no project under its share waits for room."""
    weights = {project: capacity.quota(project).weight for project in projects}
    total = sum(weights.values()) or 1.0
    return defaultdict(float, {p: capacity.cores * w / total for p, w in weights.items()})


def place_of(run_id: int, claims: Sequence[Claim], capacity: Capacity) -> Waiting | None:
    """Where a waiting run stands now (None once admitted, or when it has no claim): a claim
    that would be admitted at the next settling is position 1 with no reason."""
    settling = settle(claims, capacity)
    if any(claim.run_id == run_id for claim in settling.admit):
        return Waiting(run_id, 1, "")
    ahead = len(settling.admit)
    for place in settling.waiting:
        if place.run_id == run_id:
            return Waiting(run_id, place.position + ahead, place.reason)
    return None


def _blocked(claim: Claim, used: Demand, project_used: Demand, capacity: Capacity) -> str | None:
    """Why ``claim`` does not fit now (the first bound it meets, with the numbers); None when
    it fits."""
    demand, quota = claim.demand, capacity.quota(claim.project)
    whose = f"waiting for project {claim.project}'s quota"
    if quota.nodes is not None and project_used.nodes + demand.nodes > quota.nodes:
        free = quota.nodes - project_used.nodes
        return _words(whose, free, quota.nodes, demand.nodes, "nodes", _count)
    if quota.cores is not None and project_used.cores + demand.cores > quota.cores:
        free = quota.cores - project_used.cores
        return _words(whose, free, quota.cores, demand.cores, "cores", _cores)
    if used.nodes + demand.nodes > capacity.nodes:
        free = capacity.nodes - used.nodes
        return _words(MACHINE_WAIT, free, capacity.nodes, demand.nodes, "nodes", _count)
    if used.cores + demand.cores > capacity.cores:
        free = capacity.cores - used.cores
        return _words(MACHINE_WAIT, free, capacity.cores, demand.cores, "cores", _cores)
    if used.memory_mib + demand.memory_mib > capacity.memory_mib:
        free = capacity.memory_mib - used.memory_mib
        return _words(MACHINE_WAIT, free, capacity.memory_mib, demand.memory_mib, "memory", _memory)
    return None


def _words(
    waiting: str, free: float, limit: float, asked: float, name: str, words: AmountWords
) -> str:
    return (
        f"{waiting}: {_bare(max(free, 0), name)} of {words(limit, name)} free, "
        f"the run needs {words(asked, name)}"
    )


def _bare(amount: float, name: str) -> str:
    if name == "memory":
        return f"{amount / MIB_PER_GIB:g} GiB" if amount >= MIB_PER_GIB else f"{amount:g} MiB"
    return f"{amount:g}"


def _count(amount: float, name: str) -> str:
    noun = name.removesuffix("s")
    return f"{amount:g} {noun}" if amount == 1 else f"{amount:g} {noun}s"


def _cores(amount: float, name: str = "cores") -> str:
    return _count(amount, "cores")


def _memory(amount: float, name: str = "memory") -> str:
    return f"{_bare(amount, 'memory')} of memory"


@dataclass(frozen=True)
class QueueState:
    """Where a run stands in its queue, as every surface shows it, whatever admits it (this
    machine's rule, or Kueue on a cluster): the queue, what the run asked for, since when it
    waits, and while it waits its position (1: next) and the reason in words; once admitted,
    when (so how long it waited)."""

    queue: str
    asked: str
    requested_at: datetime
    admitted_at: datetime | None
    position: int | None
    reason: str

    def waited_seconds(self, now: datetime) -> float:
        """How long it waited: until its admission, or until ``now`` while it still waits."""
        return max(0.0, ((self.admitted_at or now) - self.requested_at).total_seconds())

    def in_words(self, now: datetime) -> str:
        waited = _duration(self.waited_seconds(now))
        if self.admitted_at is not None:
            return f"admitted by queue {self.queue} after waiting {waited}"
        place = f", position {self.position}" if self.position else ""
        why = f": {self.reason}" if self.reason else ": being admitted"
        return f"waiting {waited} in queue {self.queue}{place}{why}"


def _duration(seconds: float) -> str:
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"
