"""Benchmark: a burst of mixed distributed runs on a machine that fits only a few of them at
once, with the local launcher's all-or-nothing admission (``octotrain/admission.py``) and,
in the same run, without it (``local_admission = false``: every node starts as soon as its
launch task gets a worker slot, as before).

    uv run python -m bench.admission [--runs 16] [--seconds 40] [--cores 6] [--slots 8] \\
        [--rendezvous-timeout 120] [--phases on,off,kueue,k8s-off]

Phases ``on`` and ``off`` run on the local launcher; ``kueue`` and ``k8s-off`` run the same
burst on the tests' real control plane with and without Kueue (``bench/admission_kubernetes.py``).

Each phase starts a real Airflow (api-server, scheduler with the LocalExecutor and
``--slots`` worker slots, dag-processor, triggerer) on fresh PostgreSQL databases. The burst:
``--runs`` runs triggered at once through Octotrain's REST API, of tasks with 1, 2 and 4 nodes
(1 core each) in two projects (``demo`` of weight 2 and ``team-b`` of weight 1, in the bench's
quota file) at priorities -10, 0 and 10. Each node meets its partners first, as a distributed
training does (node 0 listens on ``MASTER_PORT``; the others connect; all go once all are
there; a node alone for ``--rendezvous-timeout`` seconds fails, as torch's rendezvous does),
then trains (sleeps) ``--seconds`` and writes its model file. Admission on: ``--cores``
cores for everything (the machine's bound), so runs wait for room.

Sampled every half second from the catalog (node holds, admission claims, runs):

- partial starts: a node training while its run is not admitted (admission on), or a run
  whose nodes' starts lie over ``PARTIAL_SECONDS`` apart (either phase: a node waited for its
  partners); goal 0 with admission;
- deadlocks: samples in which runs wait while nothing is held and one of them would fit, for
  over ``DEADLOCK_SECONDS`` on end (the longest such gap is shown beside); goal 0;
- cores used while runs wait, against what the waiting runs could use (the held cores plus
  those of the runs the rule would admit at once, at most the machine): goal >= 90 %; counted
  on the nodes actually training (their node holds), so start-up gaps count against it;
- each project's share of the node-seconds while both have runs waiting, against its weight's
  share (goal within 10 points);
- the time until the last run ended, and the runs that failed (with admission off, nodes that
  hold slots while their partners wait for one time out); ratio: off over on.

Preemption exists on Kubernetes only (Kueue): ``tests/e2e/test_kubernetes_admission.py``
holds a preempted run to its last checkpoint. The local rule never stops a running node.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path

import sqlalchemy
from sqlalchemy import select

from bench.admission_burst import (
    MASTER_PORT,
    PARTIAL_SECONDS,
    WEIGHTS,
    Figures,
    burst_airflow,
    trigger_burst,
)
from bench.admission_kubernetes import KUBERNETES_PHASES, run_kubernetes_phase
from bench.load import ENDED, fresh_database
from octotrain.admission import Capacity, Claim, Demand, ProjectQuota, settle
from octotrain.catalog.models import AdmissionClaim, NodeHold, Run, as_utc
from tests.live_airflow import LiveAirflow

SAMPLE_SECONDS = 0.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--cores", type=int, default=6)
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--rendezvous-timeout", type=float, default=120.0)
    parser.add_argument(
        "--phases",
        default="on,off",
        help="on,off (the local launcher); kueue,k8s-off (the control plane)",
    )
    parser.add_argument("--timeout", type=float, default=1800.0)
    arguments = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    print(f"{arguments.runs} runs of 1, 2 and 4 nodes (1 core each; projects demo weight 2, "
          f"team-b weight 1; priorities -10, 0, 10) triggered at once; each node meets its "
          f"partners, then trains {arguments.seconds:g} s; {arguments.slots} worker slots; "
          f"admission on: {arguments.cores} cores; this machine: {os.cpu_count()} CPUs",
          flush=True)  # fmt: skip
    results = {}
    for phase in arguments.phases.split(","):
        if phase in KUBERNETES_PHASES:
            results[phase] = run_kubernetes_phase(phase, arguments)
        else:
            results[phase] = run_phase(phase, arguments)
        show(phase, results[phase])
    passed = True
    for admitted, without in (("on", "off"), ("kueue", "k8s-off")):
        if {admitted, without} <= set(results):
            ratio = results[without].wall_seconds / results[admitted].wall_seconds
            print(f"\ntime until the last run ended, {without} / {admitted}: {ratio:.2f}x "
                  f"({results[without].wall_seconds:.0f} s / "
                  f"{results[admitted].wall_seconds:.0f} s)")  # fmt: skip
        if admitted in results:
            passed = checked(admitted, results[admitted]) and passed
    if not passed:
        sys.exit(1)


def checked(phase: str, figures: Figures) -> bool:
    """Print the goals of a phase with admission; whether all were met."""
    checks = [
        (figures.partial == 0, f"{phase}: partial starts {figures.partial} (goal 0)"),
        (figures.deadlock_samples == 0,
         f"{phase}: deadlock samples {figures.deadlock_samples} (goal 0)"),
        ((figures.utilisation() or 0) >= 0.9, f"{phase}: cores used while runs waited >= 90 %"),
        (figures.failed == 0, f"{phase}: failed runs {figures.failed} (goal 0)"),
    ]  # fmt: skip
    shares = figures.shares()
    if shares:
        fair = all(abs(shares.get(name, 0) - weight / sum(WEIGHTS.values())) <= 0.10
                   for name, weight in WEIGHTS.items())  # fmt: skip
        checks.append((fair, f"{phase}: each project's share within 10 points of its weight's"))
    for passed, what in checks:
        print(f"{'PASS' if passed else 'FAIL'} {what}")
    return all(passed for passed, _ in checks)


def show(phase: str, figures: Figures) -> None:
    utilisation = figures.utilisation()
    shares = figures.shares()
    total = sum(WEIGHTS.values())
    shown_shares = ", ".join(f"{name} {share:.0%} (weight {WEIGHTS[name] / total:.0%})"
                             for name, share in sorted(shares.items()))  # fmt: skip
    print(f"admission {phase}: last run ended after {figures.wall_seconds:.0f} s; failed runs "
          f"{figures.failed}; partial starts {figures.partial} (widest spread of a run's node "
          f"starts {figures.spread_max:.1f} s); deadlock samples {figures.deadlock_samples} "
          f"(longest idle gap while a run would fit {figures.longest_idle:.0f} s); "
          f"cores training while runs waited: "
          f"{'-' if utilisation is None else f'{utilisation:.0%}'} of what they could use; "
          f"node-seconds under contention: {shown_shares or '-'}", flush=True)  # fmt: skip


def run_phase(phase: str, arguments: argparse.Namespace) -> Figures:
    root = Path(tempfile.mkdtemp(prefix=f"octotrain-bench-admission-{phase}-"))
    quotas = root / "quotas.toml"
    quotas.write_text("".join(f'[projects.{name}]\nweight = {weight}\n\n'
                              for name, weight in WEIGHTS.items()))  # fmt: skip
    weights = {name: ProjectQuota(weight=weight) for name, weight in WEIGHTS.items()}
    capacity = Capacity(nodes=arguments.slots, cores=arguments.cores, memory_mib=1 << 30,
                        quotas=weights)  # fmt: skip
    leaks: list[str] = []
    with ExitStack() as stack:
        metadata_url = stack.enter_context(fresh_database("admission_meta"))
        catalog_url = stack.enter_context(fresh_database("admission_catalog"))
        settings = {
            "OCTOTRAIN_STATE_DIR": str(root / "state"),
            "OCTOTRAIN_CATALOG_URL": catalog_url,
            "OCTOTRAIN_LOCAL_ADMISSION": "true" if phase == "on" else "false",
            "OCTOTRAIN_LOCAL_CORES": str(arguments.cores),
            "OCTOTRAIN_LOCAL_NODES": str(arguments.slots),
            "OCTOTRAIN_LOCAL_QUOTAS_FILE": str(quotas),
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": str(arguments.slots),
            "AIRFLOW__CORE__MAX_ACTIVE_RUNS_PER_DAG": str(arguments.runs),
        }
        started = burst_airflow(stack, root, settings, arguments, port=MASTER_PORT,
                                metadata_url=metadata_url, leaks=leaks)  # fmt: skip
        return burst(started.server, started.catalog, started.task_ids, capacity, arguments)


def burst(
    server: LiveAirflow,
    catalog: sqlalchemy.Engine,
    task_ids: list[int],
    capacity: Capacity,
    arguments: argparse.Namespace,
) -> Figures:
    """Trigger the runs at once, sample the catalog until all have ended, add it up."""
    first, run_ids = trigger_burst(server, task_ids, arguments.runs)
    wanted = set(run_ids)
    figures = Figures()
    deadline = time.monotonic() + arguments.timeout
    last = time.time()
    while True:
        time.sleep(SAMPLE_SECONDS)
        now = time.time()
        runs, holds, claims = read(catalog, wanted)
        account(figures, runs, holds, claims, capacity, now - last)
        last = now
        if all(run.state.value in ENDED or run.state.value == "stopped" for run in runs) and (
            len(runs) == len(wanted)
        ):
            break
        if time.monotonic() > deadline:
            print(f"  timed out after {arguments.timeout:.0f} s", flush=True)
            break
    ends = [as_utc(run.ended_at).timestamp() for run in runs if run.ended_at]
    figures.wall_seconds = max(ends, default=time.time()) - first
    figures.failed = sum(run.state.value != "success" for run in runs)
    starts: dict[int, list[float]] = defaultdict(list)
    for hold in holds:
        starts[hold.run_id].append(as_utc(hold.started_at).timestamp())
    spreads = [max(times) - min(times) for times in starts.values() if len(times) > 1]
    figures.spread_max = max(spreads, default=0.0)
    figures.partial += sum(spread > PARTIAL_SECONDS for spread in spreads)
    return figures


def read(
    catalog: sqlalchemy.Engine, wanted: set[str]
) -> tuple[list[Run], list[NodeHold], list[AdmissionClaim]]:
    with sqlalchemy.orm.Session(catalog) as session:
        runs = list(session.scalars(select(Run).where(Run.airflow_run_id.in_(wanted))))
        ids = [run.id for run in runs]
        holds = list(session.scalars(select(NodeHold).where(NodeHold.run_id.in_(ids))))
        claims = list(session.scalars(select(AdmissionClaim).where(AdmissionClaim.run_id.in_(ids))))
        session.expunge_all()
    return runs, holds, claims


def account(
    figures: Figures,
    runs: list[Run],
    holds: list[NodeHold],
    claims: list[AdmissionClaim],
    capacity: Capacity,
    seconds: float,
) -> None:
    """Add one sample: node holds open now, claims waiting and held (admission on)."""
    project_of = {run.id: run_project(run) for run in runs}
    training: dict[int, int] = defaultdict(int)
    for hold in holds:
        if hold.ended_at is None:
            training[hold.run_id] += 1
    open_claims = [claim for claim in claims if claim.released_at is None]
    waiting = [claim for claim in open_claims if claim.admitted_at is None]
    held = [claim for claim in open_claims if claim.admitted_at is not None]
    admitted = {claim.run_id for claim in held}
    figures.partial += sum(
        1 for claim in waiting if training.get(claim.run_id)
    )  # a node training while its run waits for admission
    if not waiting:
        figures.note_idle(seconds, idle=False)
    else:
        could = settle([as_claim(claim) for claim in open_claims], capacity).admit
        figures.note_idle(seconds, idle=not held and not any(training.values()) and bool(could))
        usable = sum(claim.cores for claim in held) + sum(c.demand.cores for c in could)
        figures.used += sum(training.values()) * seconds
        figures.usable += min(usable, capacity.cores) * seconds
        projects_waiting = {claim.project for claim in waiting}
        if len(projects_waiting) == len(WEIGHTS):
            for run_id, nodes in training.items():
                if run_id in admitted:
                    figures.contended[project_of.get(run_id, "?")] += nodes * seconds


def as_claim(row: AdmissionClaim) -> Claim:
    return Claim(row.run_id, row.project, row.priority,
                 Demand(row.nodes, row.cores, row.memory_mib), as_utc(row.requested_at),
                 as_utc(row.admitted_at) if row.admitted_at else None)  # fmt: skip


def run_project(run: Run) -> str:
    return str((run.plan or {}).get("project", "?"))


if __name__ == "__main__":
    main()
