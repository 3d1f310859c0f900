"""Load and faults: N runs of a short training task triggered at once, on PostgreSQL, with the
LocalExecutor, then with Celery, then with Celery while the scheduler and a worker are killed.

    uv run python -m bench.load [--runs 50] [--phases local,celery,faults]

Each phase starts its own Airflow (api-server, scheduler, dag-processor; for Celery two workers
of 16 processes, broker: Redis on 127.0.0.1:6379 under a key prefix of their own, as
tests/live_celery.py sets it up) on fresh PostgreSQL databases (metadata and catalog) on
127.0.0.1:5432, created and dropped here. The task has 1 node (local launcher) whose
``python -c`` command sleeps ``SLEEP_SECONDS``, appends ``POINTS`` metric points with the
metrics writer and writes ``OUTPUT/model.txt`` naming its ``RUN_ID``.

- baseline: a bare DAG of one BashOperator running the same command, triggered N times at once
  in the same Airflow just before; the ratio is Octotrain's runs/minute over the bare DAG's, so
  it says what the five stages (five task starts) cost against one under the same load;
- throughput: runs that ended, per minute, from the first trigger request to the last run's end;
- scheduler lag, per run: its first task's ``queued_when`` (queue) and ``start_date`` (start)
  minus the run's ``queued_at``; handoff: each later stage's ``queued_when`` minus the end of the
  stage before it;
- checks: every run succeeded; in the object store each run has exactly its three log files
  with the training's line once, exactly ``POINTS`` metric points numbered 0..POINTS-1; the
  catalog has exactly one model version per run, numbers unique, each holding its run's file;
  no half-written object; no training or Airflow task process left when the runs have ended,
  nor any process of the phase once its Airflow is stopped.
- faults (Celery): the scheduler and worker 1 are SIGKILLed (process groups) once half of the
  runs have ended and restarted ``--pause`` seconds later; every run must then end, a failed
  run must leave no model version and no half-uploaded one, its catalog run must not stay
  active. Airflow's detection settings are shortened (printed) so that this takes minutes, not
  the defaults' 5-10 minutes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy
from sqlalchemy import select

from hooks.local.local_process import AGENT_DIR
from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import PARTIAL_MARKER, LocalFolderStore
from octotrain.catalog.models import ModelRepository, ModelVersion, Run, RunState
from octotrain.catalog.named_objects import ModelRepositories
from octotrain.planning import run_key
from octotrain.run_layout import model_run_prefix
from octotrain.settings import REPO_ROOT
from tests.factories import ADMIN, add_command_algorithm, add_task
from tests.live_airflow import LiveAirflow, demo_airflow
from tests.live_celery import celery_broker, celery_settings, celery_workers, ping_workers

POSTGRES_ADMIN_URL = "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
SLEEP_SECONDS = 1.0
POINTS = 20
REPOSITORY = "bench-load-model"
NODE = "single-0"
CHAIN = ("validate", "stage_data", "launch", "collect_logs", "archive_model")
ENDED = ("success", "failed")
# Both executors get the same task slots: LocalExecutor's parallelism, Celery's 2 x 16.
PARALLELISM = 32
WORKER_CONCURRENCY = 16
# Fault phase: how soon Airflow notices a dead task, a dead scheduler and a lost message
# (defaults 300, 300, 600 and 120 s), so that a phase ends in minutes.
FAULT_DETECTION = {
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "60",
    "AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL": "30",
    "AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT": "120",
    "AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT_CHECK_INTERVAL": "30",
}
# An Airflow task process: the task runner ("airflow worker -- <task instance id>") or the
# Celery pool's supervisor of one task (the LocalExecutor's idle workers are not tasks).
TASK_PROCESS = re.compile(r"^airflow (worker -- [0-9a-f]{8}-|task supervisor:)")

TRAINING = """\
# {marker}
import os, time
from octotrain_metrics import MetricsWriter
time.sleep({sleep})
metrics = MetricsWriter()
metrics.declare("loss", x="step", ys=["loss"], description="bench-load-points")
for step in range({points}):
    metrics.log("loss", step=step, loss=1.0 / (step + 1))
with open(os.path.join(os.environ["OUTPUT"], "model.txt"), "w") as model:
    model.write(os.environ["RUN_ID"])
print("trained", os.environ["RUN_ID"])
"""
BARE_DAG = """
from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG

with DAG(dag_id="bare_load", schedule=None, catchup=False, is_paused_upon_creation=False,
         max_active_runs={runs}):
    BashOperator(task_id="train", bash_command={command!r}, env={env!r}, append_env=True)
"""


@contextmanager
def fresh_database(label: str) -> Iterator[str]:
    """A new PostgreSQL database on 127.0.0.1:5432 for this phase (or another bench), named
    after ``label``, dropped afterwards."""
    name = f"octotrain_bench_{label}_{uuid.uuid4().hex[:8]}"
    admin = sqlalchemy.create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
        yield POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def check_celery_executor(root: Path) -> None:
    """Import the CeleryExecutor as the scheduler and the workers will, so that a broken
    install (provider 3.26 with celery 5.7, which removed ``celery.backends.database.retry``)
    is said at once, not found as workers that never run anything."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("AIRFLOW")}
    done = subprocess.run(
        [sys.executable, "-c", "import airflow.providers.celery.executors.celery_executor"],
        env=env | {"AIRFLOW_HOME": str(root / "import-check")},
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise RuntimeError(f"the CeleryExecutor cannot be imported: {done.stderr[-600:]}")


class Component:
    """An Airflow component the fault phase kills: its own process group, its log appended."""

    def __init__(self, command: str, env: dict[str, str], log: Path) -> None:
        self.command, self.env, self.log = command, env, log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as output:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "airflow", *self.command.split()], env=self.env,
                stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    def kill(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        """SIGTERM to the group, SIGKILL after 30 s."""
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        except ProcessLookupError:
            pass


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    session: int
    state: str
    cmdline: str


def scan_processes() -> list[Proc]:
    """This machine's processes, as /proc shows them now."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        found.append(
            Proc(int(entry.name), int(fields[1]), int(fields[3]), fields[0], cmdline.strip())
        )
    return found


@dataclass
class Marks:
    """How a phase's processes are recognised: training commands (their own sessions) by a
    marker in their command line; Airflow's processes by their session, which every process
    the phase starts opens (start_new_session) and its task processes keep. Not by
    AIRFLOW_HOME in their environment: setproctitle overwrites what /proc shows of it."""

    marker: str
    sessions: set[int] = field(default_factory=set)
    # Sessions of children that are neither the phase's nor its trainings' (a control plane
    # started before it), left out of both.
    foreign: set[int] = field(default_factory=set)

    def add_foreign_children(self) -> None:
        """Note this process's children so far as foreign (started before the phase)."""
        self.foreign |= {proc.pid for proc in scan_processes() if proc.ppid == os.getpid()}

    def add_children(self) -> None:
        """Note the sessions of this process's children (the phase's Airflow components)."""
        children = {proc.pid for proc in scan_processes() if proc.ppid == os.getpid()}
        self.sessions |= children - self.foreign

    def training(self) -> list[Proc]:
        return [proc for proc in scan_processes() if self.marker in proc.cmdline]

    def tasks(self) -> list[Proc]:
        return [
            proc
            for proc in scan_processes()
            if proc.session in self.sessions and TASK_PROCESS.match(proc.cmdline)
        ]

    def any(self) -> list[Proc]:
        return [
            proc
            for proc in scan_processes()
            if proc.state != "Z" and (self.marker in proc.cmdline or proc.session in self.sessions)
        ]

    def dead_components(self) -> list[int]:
        """Components (children of this process whose sessions were noted) that exited by
        themselves (zombies until reaped): waiting for runs is pointless then. Other children
        (bench.scale's containers, which its node agent runs) are zombies for a moment whenever
        they end."""
        return [
            proc.pid
            for proc in scan_processes()
            if proc.ppid == os.getpid() and proc.state == "Z" and proc.pid in self.sessions
        ]


class Api:
    """Airflow's and Octotrain's REST APIs as the admin user."""

    def __init__(self, server: LiveAirflow) -> None:
        token = httpx.post(f"{server.url}/auth/token",
                           json={"username": "admin", "password": server.password})  # fmt: skip
        token.raise_for_status()
        headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
        self.http = httpx.Client(base_url=server.url, headers=headers, timeout=120)

    def _all(self, path: str, key: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        while True:
            page = self.http.get(path, params={"limit": 100, "offset": len(items)})
            page.raise_for_status()
            batch = page.json()[key]
            items += batch
            if len(batch) < 100:
                return items

    def runs(self, dag_id: str) -> dict[str, dict[str, Any]]:
        return {
            run["dag_run_id"]: run
            for run in self._all(f"/api/v2/dags/{dag_id}/dagRuns", "dag_runs")
        }

    def task_instances(self, dag_id: str) -> list[dict[str, Any]]:
        return self._all(f"/api/v2/dags/{dag_id}/dagRuns/~/taskInstances", "task_instances")


def wait_ready(api: Api, key_prefix: str | None, timeout: float = 180) -> None:
    """Until the scheduler heartbeats (and both Celery workers answer a ping), so that the
    lag measured is the scheduler's, not its start-up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        health = api.http.get("/api/v2/monitor/health").json()
        if health["scheduler"]["status"] == "healthy" and (
            key_prefix is None or len(ping_workers(key_prefix)) == 2
        ):
            return
        time.sleep(1)
    raise RuntimeError(f"the scheduler or the workers were not up in {timeout:g} s")


def trigger_all(count: int, trigger: Callable[[int], str]) -> tuple[float, float, list[str]]:
    """Send ``count`` trigger requests at once; (wall clock before the first, seconds they
    took, run ids)."""
    started = time.time()
    with ThreadPoolExecutor(max_workers=min(count, 64)) as pool:
        run_ids = list(pool.map(trigger, range(count)))
    return started, time.time() - started, run_ids


def wait_runs(
    api: Api,
    dag_id: str,
    run_ids: list[str],
    timeout: float,
    marks: Marks,
    on_poll: Callable[[int], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Poll until every run has ended or ``timeout`` passes; the runs as last seen (those
    still active then are reported, not waited for). A component that exited by itself ends
    the phase at once."""
    deadline = time.monotonic() + timeout
    while True:
        if dead := marks.dead_components():
            raise RuntimeError(f"Airflow components exited by themselves (pids {dead}); see logs")
        runs = api.runs(dag_id)
        ended = sum(runs.get(run_id, {}).get("state") in ENDED for run_id in run_ids)
        if on_poll is not None:
            on_poll(ended)
        if ended == len(run_ids) or time.monotonic() > deadline:
            return {run_id: runs.get(run_id, {"state": "missing"}) for run_id in run_ids}
        time.sleep(1)


def _gap(later: str | None, earlier: str | None) -> float | None:
    """Seconds between two of Airflow's timestamps, when both are set."""
    if later is None or earlier is None:
        return None
    return datetime.fromisoformat(later).timestamp() - datetime.fromisoformat(earlier).timestamp()


def _rank(values: list[float], quantile: float) -> float:
    """Nearest-rank quantile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(quantile * len(ordered)) - 1)]


def _p50_p95(values: list[float]) -> str:
    return f"{_rank(values, 0.5):6.2f} /{_rank(values, 0.95):6.2f}" if values else "     - /     -"


@dataclass
class Timing:
    """Throughput and scheduler lag of one DAG's runs."""

    ended: int
    runs: int
    wall: float
    per_minute: float
    queue_lag: list[float]
    start_lag: list[float]
    handoff: list[float]

    @classmethod
    def of(
        cls, first_trigger: float, runs: dict[str, dict[str, Any]], tis: list[dict[str, Any]]
    ) -> Timing:
        ended = [run for run in runs.values() if run["state"] in ENDED]
        ends = [datetime.fromisoformat(run["end_date"]).timestamp() for run in ended]
        last = max(ends, default=first_trigger)
        wall = last - first_trigger
        by_run: dict[str, dict[str, dict[str, Any]]] = {}
        for ti in tis:
            if ti["dag_run_id"] in runs:
                by_run.setdefault(ti["dag_run_id"], {})[ti["task_id"]] = ti
        queue_lag, start_lag, handoff = [], [], []
        for run_id, run in runs.items():
            stages = by_run.get(run_id, {})
            first = stages.get("validate") or stages.get("train") or {}
            if (lag := _gap(first.get("queued_when"), run.get("queued_at"))) is not None:
                queue_lag.append(lag)
            if (lag := _gap(first.get("start_date"), run.get("queued_at"))) is not None:
                start_lag.append(lag)
            for before, after in itertools.pairwise(CHAIN):
                done, next_one = stages.get(before, {}), stages.get(after, {})
                if (gap := _gap(next_one.get("queued_when"), done.get("end_date"))) is not None:
                    handoff.append(gap)
        per_minute = len(ended) / (wall / 60) if wall > 0 else 0.0
        return cls(len(ended), len(runs), wall, per_minute, queue_lag, start_lag, handoff)

    def row(self, phase: str, dag: str) -> str:
        return (
            f"{phase:7} {dag:9} {self.ended:3}/{self.runs:<3} {self.wall:8.1f} "
            f"{self.per_minute:8.1f}   {_p50_p95(self.queue_lag)}    {_p50_p95(self.start_lag)}"
            f"    {_p50_p95(self.handoff)}"
        )


@dataclass
class Verdict:
    """What the object store, the catalog and the process table say about a DAG's runs."""

    states: Counter[str] = field(default_factory=Counter)
    complete: int = 0  # succeeded runs with everything
    versions: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        states = ", ".join(f"{count} {state}" for state, count in sorted(self.states.items()))
        return (
            f"runs: {states}; complete (3 logs, {POINTS} points, 1 model version): "
            f"{self.complete}; model versions: {self.versions}; problems: {len(self.problems)}"
        )


def verify(
    runs: dict[str, dict[str, Any]], task_id: int, catalog_url: str, objects: Path
) -> Verdict:
    """Check every run's logs, metric points and model version, and what failed runs left."""
    verdict = Verdict(states=Counter(run["state"] for run in runs.values()))
    store = LocalFolderStore(objects)
    catalog = CatalogHook(catalog_url)
    try:
        with catalog.session() as session:
            repository = session.scalars(
                select(ModelRepository).where(ModelRepository.name == REPOSITORY)
            ).one()
            rows = session.scalars(
                select(ModelVersion).where(ModelVersion.repository_id == repository.id)
            ).all()
            numbers = [version.version for version in rows]
            archived = Counter(version.object_prefix for version in rows)
            versions = {version.object_prefix: (version.version, version.id) for version in rows}
            catalog_runs = {
                run.airflow_run_id: (run.state, run.model_version_id)
                for run in session.scalars(select(Run).where(Run.task_id == task_id))
            }
    finally:
        catalog.dispose()
    verdict.versions = len(numbers)
    if len(set(numbers)) != len(numbers):
        verdict.problems.append(f"duplicate model version numbers: {sorted(numbers)}")
    twice = {prefix: count for prefix, count in archived.items() if count > 1}
    if twice:
        verdict.problems.append(f"runs archived more than once: {twice}")
    expected_prefixes = set()
    for run_id, run in runs.items():
        key = run_key(run_id)
        prefix = model_run_prefix("demo", REPOSITORY, task_id, key)
        if run["state"] == "success":
            expected_prefixes.add(prefix)
            problems = _check_success(store, task_id, run_id, key, prefix, versions, catalog_runs)
            verdict.problems += problems
            verdict.complete += not problems
        elif run["state"] == "failed":
            verdict.problems += _check_failed(objects, run_id, prefix, versions, catalog_runs)
            logs = {info.key.rsplit("/", 1)[1] for info in store.list(f"runs/{task_id}/{key}/logs")}
            verdict.notes.append(f"failed {run_id}: logs collected {sorted(logs) or 'none'}")
        else:
            verdict.problems.append(f"{run_id} did not end: {run['state']}")
    strays = sorted(set(versions) - expected_prefixes)
    if strays:
        verdict.problems.append(f"model versions of no succeeded run: {strays}")
    partial = [str(path) for path in objects.rglob(f"*{PARTIAL_MARKER}*")]
    if partial:
        verdict.problems.append(f"half-written objects: {partial}")
    return verdict


def _check_success(
    store: LocalFolderStore,
    task_id: int,
    run_id: str,
    key: str,
    prefix: str,
    versions: dict[str, tuple[int, int]],
    catalog_runs: dict[str, tuple[RunState, int | None]],
) -> list[str]:
    problems = []
    logs = {
        info.key.rsplit("/", 1)[1]: info.key for info in store.list(f"runs/{task_id}/{key}/logs")
    }
    names = {f"train-{task_id}-{NODE}.log", f"train-{task_id}-{NODE}-init.log",
             f"train-{task_id}-{NODE}-sidecar.log"}  # fmt: skip
    if set(logs) != names:
        problems.append(f"{run_id}: log files {sorted(logs)}, expected {sorted(names)}")
    times = objects_text(store, logs.get(f"train-{task_id}-{NODE}.log")).count(
        f"trained {run_id}\n"
    )
    if times != 1:
        problems.append(f"{run_id}: the train log has its line {times} times")
    points = objects_text(store, f"runs/{task_id}/{key}/metrics/{NODE}/loss.jsonl")
    steps = [json.loads(line)["step"] for line in points.splitlines() if line]
    if steps != list(range(POINTS)):
        problems.append(f"{run_id}: metric steps {steps}, expected 0..{POINTS - 1}")
    state, version_id = catalog_runs.get(run_id, (None, None))
    if prefix not in versions:
        problems.append(f"{run_id}: no model version under {prefix}")
    elif state != RunState.SUCCESS or version_id != versions[prefix][1]:
        problems.append(f"{run_id}: catalog run {state}, version id {version_id}")
    elif objects_text(store, f"{prefix}/model.txt") != run_id:
        problems.append(f"{run_id}: its model version does not hold its model.txt")
    return problems


def _check_failed(
    objects: Path,
    run_id: str,
    prefix: str,
    versions: dict[str, tuple[int, int]],
    catalog_runs: dict[str, tuple[RunState, int | None]],
) -> list[str]:
    problems = []
    left = [str(path) for path in (objects / prefix).rglob("*") if path.is_file()]
    if prefix in versions:
        problems.append(f"failed {run_id} has model version {versions[prefix][0]} ({left})")
    elif left:
        problems.append(f"failed {run_id} left a half-archived model: {left}")
    state = catalog_runs.get(run_id, (None, None))[0]
    if state not in (RunState.FAILED, RunState.STOPPED):
        problems.append(f"failed {run_id}: its catalog run is {state}")
    return problems


def objects_text(store: LocalFolderStore, key: str | None) -> str:
    if key is None:
        return ""
    path = store.root / key
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def settle(marks: Marks, seconds: float = 30) -> list[str]:
    """Once the runs have ended: wait (bounded) for task and training processes to exit; what
    is still alive then."""
    deadline = time.monotonic() + seconds
    while True:
        alive = marks.training() + marks.tasks()
        if not alive or time.monotonic() > deadline:
            return [f"{proc.pid} {proc.cmdline[:120]}" for proc in alive]
        time.sleep(1)


def sweep(marks: Marks, found: list[str]) -> None:
    """After the phase's Airflow is stopped: anything of the phase still alive is a leak;
    record it, then kill it (by pid: only this phase's processes match)."""
    for proc in marks.any():
        found.append(f"{proc.pid} {proc.cmdline[:120]}")
        with suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)


@dataclass
class FaultLog:
    """What the fault phase did and saw."""

    at_ended: int = -1
    in_flight: Counter[str] = field(default_factory=Counter)
    killed_tis: dict[str, str] = field(default_factory=dict)  # task instance id -> task id
    outlived: list[str] = field(default_factory=list)  # the killed worker's, alive after
    outlived_pause: list[str] = field(default_factory=list)  # … and after the pause
    trainings: list[str] = field(default_factory=list)  # training under the killed worker
    trainings_pause: list[str] = field(default_factory=list)


def fault(
    api: Api,
    dag_id: str,
    scheduler: Component,
    worker: Component,
    worker_name: str,
    marks: Marks,
    pause: float,
    log: FaultLog,
) -> None:
    """SIGKILL the scheduler's and ``worker``'s process groups, wait, start them again; note
    what was in flight, which task instances ran in the killed worker, and which of its
    processes (Airflow's task processes have process groups of their own, in the worker's
    session) and of their training processes outlived it."""
    for ti in api.task_instances(dag_id):
        if ti["state"] in ("queued", "running", "scheduled"):
            log.in_flight[f"{ti['task_id']}:{ti['state']}"] += 1
            if ti["state"] == "running" and (ti["hostname"] or "").startswith(worker_name):
                log.killed_tis[ti["id"]] = ti["task_id"]
    assert worker.process is not None
    session = worker.process.pid
    scheduler.kill()
    worker.kill()

    def left() -> tuple[list[str], list[str]]:
        processes = [proc for proc in scan_processes() if proc.state != "Z"]
        ours = {proc.pid for proc in processes if proc.session == session}
        return (
            [f"{proc.pid} {proc.cmdline[:60]}" for proc in processes if proc.pid in ours],
            [str(p.pid) for p in processes if marks.marker in p.cmdline and p.ppid in ours],
        )

    log.outlived, log.trainings = left()
    time.sleep(pause)
    log.outlived_pause, log.trainings_pause = left()
    scheduler.start()
    worker.start()
    marks.add_children()


@dataclass
class PhaseResult:
    name: str
    rows: list[str]
    lines: list[str]
    ratio: float | None = None


def run_phase(name: str, arguments: argparse.Namespace, root: Path, marker: str) -> PhaseResult:
    """One phase in its own Airflow: ``local``, ``celery`` or ``faults`` (Celery)."""
    folder = root / name
    dags = folder / "dags"
    dags.mkdir(parents=True)
    (dags / "training_tasks.py").write_text((REPO_ROOT / "dags/training_tasks.py").read_text())
    training = TRAINING.format(marker=marker, sleep=SLEEP_SECONDS, points=POINTS)
    bare_root = folder / "bare"
    command = (
        'export RUN_ID="{{ run_id }}" && export METRICS="$BARE_ROOT/$RUN_ID/metrics" '
        'OUTPUT="$BARE_ROOT/$RUN_ID/output" && mkdir -p "$OUTPUT" && '
        f"{shlex.quote(sys.executable)} -c {shlex.quote(training)}"
    )
    env = {"BARE_ROOT": str(bare_root), "PYTHONPATH": f"{AGENT_DIR}:{REPO_ROOT}"}
    (dags / "bare_load.py").write_text(BARE_DAG.format(runs=arguments.runs, command=command,
                                                      env=env))  # fmt: skip
    result = PhaseResult(name, [], [])
    leaks: list[str] = []
    with ExitStack() as stack:
        metadata_url = stack.enter_context(fresh_database("load_meta"))
        catalog_url = stack.enter_context(fresh_database("load_catalog"))
        settings = {
            "OCTOTRAIN_STATE_DIR": str(folder / "state"),
            "OCTOTRAIN_CATALOG_URL": catalog_url,
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": str(PARALLELISM),
            # Room for every run at once: the local admission would hold them to this
            # machine's cores (1 a node), and this measures the platform's cost, not the cores.
            "OCTOTRAIN_LOCAL_CORES": str(arguments.runs),
            # All N runs at once (Airflow's default lets 16 runs of a DAG be active).
            "AIRFLOW__CORE__MAX_ACTIVE_RUNS_PER_DAG": str(arguments.runs),
        }
        # As in production: the dag-processor also runs the DAGs' callbacks (a failed run's
        # on_failure_callback ends its catalog run).
        components = {"scheduler": "scheduler", "dag-processor": "dag-processor"}
        key_prefix = None
        if name != "local":
            check_celery_executor(folder)
            key_prefix = stack.enter_context(celery_broker())
            settings |= celery_settings(metadata_url, key_prefix)
            workers = celery_workers(2, concurrency=WORKER_CONCURRENCY)
            components |= {"worker-1": workers[0], "worker-2": workers[1]}
        if name == "faults":
            settings |= FAULT_DETECTION
            result.lines.append(
                "  detection: " + ", ".join(f"{k.split('__')[-1].lower()}={v}"
                                            for k, v in FAULT_DETECTION.items())
            )  # fmt: skip
        marks = Marks(marker)
        stack.callback(sweep, marks, leaks)

        def prepare(catalog: CatalogHook, store: Any, _demo: object) -> int:
            add_command_algorithm(catalog, "bench-load", training)
            with catalog.session() as session:
                ModelRepositories(session, ADMIN, store).create(
                    "demo", {"name": REPOSITORY, "description": "bench.load"}
                )
            return add_task(catalog, name="bench-load", algorithm="bench-load", parameters={},
                            node_count=1, model_repository=REPOSITORY)  # fmt: skip

        server, task_id = stack.enter_context(
            demo_airflow(folder, settings, prepare, dags_folder=dags, metadata_url=metadata_url,
                         components=() if name == "faults" else tuple(components.values()))
        )  # fmt: skip
        assert task_id is not None
        marks.add_children()
        api = Api(server)
        stack.callback(api.http.close)
        dag_id = f"octotrain_task_{task_id}"
        # The fault phase starts its scheduler and workers itself, to kill them.
        owned = {}
        if name == "faults":
            for label, command in components.items():
                owned[label] = Component(command, server.env, folder / f"own-{label}.log")
                owned[label].start()
                stack.callback(owned[label].stop)
            marks.add_children()
        wait_ready(api, key_prefix)

        def bare(number: int) -> str:
            body = {"logical_date": None, "dag_run_id": f"bare-{number}"}
            answer = api.http.post("/api/v2/dags/bare_load/dagRuns", json=body)
            answer.raise_for_status()
            return str(answer.json()["dag_run_id"])

        def octotrain(number: int) -> str:
            answer = api.http.post(f"/octotrain/api/v1/tasks/{task_id}/runs",
                                   json={"request_id": f"load-{number}"})  # fmt: skip
            answer.raise_for_status()
            return str(answer.json()["dag_run_id"])

        bare_timing = None
        if name != "faults":
            first, took, run_ids = trigger_all(arguments.runs, bare)
            runs = wait_runs(api, "bare_load", run_ids, arguments.timeout, marks)
            bare_timing = Timing.of(first, runs, api.task_instances("bare_load"))
            result.rows.append(bare_timing.row(name, "bare"))
            failed = [run_id for run_id, run in runs.items() if run["state"] != "success"]
            result.lines.append(f"  bare: triggered in {took:.1f} s; not succeeded: {failed or 0}")

        faults = FaultLog()

        def maybe_fault(ended: int) -> None:
            if name == "faults" and faults.at_ended < 0 and ended >= max(1, arguments.runs // 2):
                faults.at_ended = ended
                fault(
                    api,
                    dag_id,
                    owned["scheduler"],
                    owned["worker-1"],
                    "w1@",
                    marks,
                    arguments.pause,
                    faults,
                )

        first, took, run_ids = trigger_all(arguments.runs, octotrain)
        runs = wait_runs(api, dag_id, run_ids, arguments.timeout, marks, maybe_fault)
        tis = api.task_instances(dag_id)
        timing = Timing.of(first, runs, tis)
        result.rows.append(timing.row(name, "octotrain"))
        result.lines.append(f"  octotrain: triggered in {took:.1f} s")
        if bare_timing is not None and bare_timing.per_minute:
            result.ratio = timing.per_minute / bare_timing.per_minute
        if name == "faults":
            result.lines += _fault_lines(faults, tis, arguments.pause)
        verdict = verify(runs, task_id, catalog_url, folder / "state" / "objects")
        result.lines.append("  " + verdict.summary())
        result.lines += [f"    problem: {problem}" for problem in verdict.problems]
        result.lines += [f"    {note}" for note in verdict.notes]
        left = settle(marks)
        result.lines.append(f"  task/training processes alive after the runs: {left or 0}")
    result.lines.append(f"  processes of the phase alive after Airflow stopped: {leaks or 0}")
    return result


def _fault_lines(faults: FaultLog, tis: list[dict[str, Any]], pause: float) -> list[str]:
    if faults.at_ended < 0:
        return ["  fault: never injected (the runs did not reach half-way)"]
    final = {ti["id"]: ti for ti in tis}
    states = Counter(f"{ti['task_id']}:{ti['state']}" for ti in tis)
    retried = Counter(ti["task_id"] for ti in tis if ti["try_number"] > 1)
    killed = Counter(
        f"{task_id} -> {final.get(ti_id, {}).get('state')}"
        for ti_id, task_id in faults.killed_tis.items()
    )
    return [
        f"  fault: scheduler and worker 1 SIGKILLed when {faults.at_ended} runs had ended, "
        f"restarted {pause:g} s later",
        f"    in flight then: {dict(sorted(faults.in_flight.items()))}",
        f"    running in the killed worker (task -> final state): {dict(killed) or 0}",
        f"    its processes alive after the kill: {faults.outlived or 0}; {pause:g} s later: "
        f"{faults.outlived_pause or 0}",
        f"    training processes under them: {faults.trainings or 0}; {pause:g} s later: "
        f"{faults.trainings_pause or 0}",
        f"    final task instance states: {dict(sorted(states.items()))}",
        f"    task instances on a second try or later: {dict(retried) or 0}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--phases", default="local,celery,faults")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds to wait per batch")
    parser.add_argument("--pause", type=float, default=5, help="seconds the killed stay dead")
    arguments = parser.parse_args()
    # A SIGTERM (timeout, a CI runner) unwinds like Ctrl-C, so every process started is stopped.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    root = Path(tempfile.mkdtemp(prefix="octotrain-bench-load-"))
    marker = f"octotrain-bench-load-{uuid.uuid4().hex[:8]}"
    print(f"{arguments.runs} runs at once of a 1-node training ({SLEEP_SECONDS:g} s, {POINTS} "
          f"metric points); PostgreSQL; parallelism {PARALLELISM} (Celery: 2 workers x "
          f"{WORKER_CONCURRENCY}); files in {root}", flush=True)  # fmt: skip
    results = []
    for name in arguments.phases.split(","):
        started = time.monotonic()
        result = run_phase(name, arguments, root, marker)
        print(f"{name} ({time.monotonic() - started:.0f} s):", *result.lines, sep="\n", flush=True)
        results.append(result)
    print("\nphase   dag        ended     wall s  runs/min   lag queue p50/p95  "
          "lag start p50/p95  handoff p50/p95 (s)")  # fmt: skip
    for result in results:
        print(*result.rows, sep="\n")
        if result.ratio is not None:
            print(f"{'':7} ratio      octotrain/bare runs/min {result.ratio:.2f}x")
    print("lag queue/start: the first task's queued_when/start_date minus the run's queued_at; "
          "handoff: a stage's queued_when minus the end of the stage before it")  # fmt: skip


if __name__ == "__main__":
    main()
