"""bench.scale's Kubernetes part: N two-node trainings at once on the Kubernetes launcher with a
small pool of worker slots, against the tests' real control plane (kube-apiserver, etcd,
kube-scheduler and kube-controller-manager built from Go modules, ``tests/k8s_control_plane.py``):
one node of ``tests/k8s_node_agent`` runs the pods as processes of this machine, and the
launcher acts as the worker's service account bound to the shipped Role.

A real Airflow (api-server, scheduler with the LocalExecutor, dag-processor, triggerer; their
log servers off, so that everything listens on 127.0.0.1 only) on fresh PostgreSQL databases
(metadata and catalog, 127.0.0.1:5432), ``[core] parallelism`` = the slots: the worker slots of
the whole installation. Launch tasks defer (``deferrable = true``): a node's task holds a slot
only while it creates its pod and when it ends; the triggerer follows the pods in between,
looking at each every ``--pod-poll`` seconds (``pod_poll_seconds``; 10 here, as each look
costs the triggerer a new API client: at the shipped 2 s, 100 nodes take more triggerer CPU
than a 2-core machine has). The trainings are runs of ``ceil(N / per-task)`` two-node tasks of
the demo project (spec ``cpu-small``, the demo dataset staged through the node cache), each
node sleeping ``--seconds`` and then writing its file of the model; all N are triggered at once
through Octotrain's REST API. ``--seconds`` must outlast the spread of the pods' starts, which
the slots and the machine's CPU set (900 s: 50 trainings, 4 slots, 2 cores).

Sampled every second until every run has ended: trainings at once (runs whose two pods both
have their training container running), pods training at once (the cluster's pods), task
instances running, queued and deferred (Airflow's metadata DB), the machine's available memory
and load; every 30 s, the triggerer's CPU. At the end, the task starts Airflow rescheduled (a
task runner whose import of the DAG file ran over ``[core] dagbag_import_timeout``, 30 s, on an
overloaded machine; after ``[workers] missing_dag_retries`` such starts the task fails).
Checks: all N trained at once; running task instances never above the slots; every
run succeeded in Airflow and in the catalog, with its own model version (one per run, numbers
unique) holding both nodes' files; each node's train, init and sidecar logs in the store, the
train log with the training's last line; no pod or Service left in the cluster; no container,
training or Airflow task process left after the runs, and nothing of Airflow's once it is
stopped. The ratio: peak trainings at once over N, and the wall time (first trigger to last
run end) over the training's own duration.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy
from sqlalchemy import select, text

from bench.load import ENDED, Marks, fresh_database, scan_processes, sweep, trigger_all
from hooks.storage.catalog import CatalogHook
from octotrain.catalog.models import ModelRepository, ModelVersion, Run, RunState
from octotrain.catalog.named_objects import ModelRepositories
from octotrain.contracts import NodeLogNames
from octotrain.planning import run_key
from octotrain.pods import LABEL_RUN, TRAIN_CONTAINER
from tests.config.rbac import apply_shipped, worker_account
from tests.factories import ADMIN, add_command_algorithm, add_task
from tests.k8s_control_plane import ControlPlane, control_plane, service_account_kubeconfig
from tests.k8s_node_agent.agent import NodeAgent
from tests.live_airflow import HTTP_SECONDS, LiveAirflow, demo_airflow

NAMESPACE = "octotrain"
ALGORITHM = "bench-scale-sleeps"
REPOSITORY = "bench-scale-model"
NODES = ("distributed-0", "distributed-1")
# Log servers off: they would listen on every address (and on fixed ports).
COMPONENTS = ("scheduler --skip-serve-logs", "dag-processor", "triggerer --skip-serve-logs")
SAMPLE_SECONDS = 1.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PROGRESS_SECONDS = 30.0
# How long the pods, Services and processes of ended runs may take to go.
SETTLE_SECONDS = 60.0
# The node agent compares a container's memory with its limit every 0.2 s by default, walking the
# process table each time: for a hundred containers that is more CPU than this machine has.
# These trainings stay far below their limit; a slower look costs nothing here.
MEMORY_POLL_SECONDS = 5.0
# Each node prints, sleeps, writes its own file of the model (the nodes' files may not collide)
# and prints its last line; the marker finds its process.
TRAINING = """\
# {marker}
import os, time
node, run = os.environ["NODE_INDEX"], os.environ["RUN_ID"]
print("training", run, node, flush=True)
time.sleep({seconds})
with open(os.path.join(os.environ["OUTPUT"], node + ".txt"), "w") as model:
    model.write(run)
print("trained", run, node, flush=True)
"""
# As production (config/kubernetes.toml) but for what a cluster of one machine needs: the store's
# settings from the worker's environment (no Secret), the node cache a folder of this machine;
# and the triggerer's pace of looks at running pods (``--pod-poll``).
KUBERNETES_TOML = """\
deferrable = true
object_store_secret = ""
node_cache_host_path = "{cache}"
pod_poll_seconds = {poll}
"""


@dataclass(frozen=True)
class Size:
    """What to run: ``trainings`` runs of ``ceil(trainings / per_task)`` tasks, each node
    sleeping ``seconds``, with ``slots`` worker slots, the triggerer looking at each running pod
    every ``pod_poll`` seconds; the runs may take ``timeout`` seconds."""

    trainings: int
    slots: int
    seconds: float
    per_task: int
    pod_poll: float
    timeout: float

    @property
    def tasks(self) -> int:
        return math.ceil(self.trainings / self.per_task)


@dataclass
class Sample:
    """One look: runs with both pods training, pods training, task instances by state, the
    machine's available memory and load average."""

    trainings: int
    pods: int
    states: Counter[str]
    available_gib: float
    load: float


@dataclass
class Peaks:
    """The highest figures sampled, and when the trainings first ran (seconds after the first
    trigger)."""

    trainings: int = 0
    pods: int = 0
    running: int = 0
    queued: int = 0
    deferred: int = 0
    first_training: float | None = None
    all_training: float | None = None
    lowest_available_gib: float = math.inf
    load: float = 0.0
    # The triggerer's CPU (share of a core) over the progress window that ended with the most
    # nodes deferred, and how many.
    triggerer_share: float = 0.0
    triggerer_deferred: int = 0

    def add(self, sample: Sample, elapsed: float, trainings: int) -> None:
        self.trainings = max(self.trainings, sample.trainings)
        self.pods = max(self.pods, sample.pods)
        self.running = max(self.running, sample.states["running"])
        self.queued = max(self.queued, sample.states["queued"])
        self.deferred = max(self.deferred, sample.states["deferred"])
        if sample.pods and self.first_training is None:
            self.first_training = elapsed
        if sample.trainings == trainings and self.all_training is None:
            self.all_training = elapsed
        self.lowest_available_gib = min(self.lowest_available_gib, sample.available_gib)
        self.load = max(self.load, sample.load)

    def add_triggerer(self, share: float, deferred: int) -> None:
        if (deferred, share) > (self.triggerer_deferred, self.triggerer_share):
            self.triggerer_share, self.triggerer_deferred = share, deferred


@dataclass
class Check:
    """A PASS/FAIL line and, under it, what failed."""

    passed: bool
    what: str
    problems: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        shown = [f"    {problem}" for problem in self.problems[:10]]
        more = len(self.problems) - len(shown)
        return [f"{'PASS' if self.passed else 'FAIL'} {self.what}", *shown] + (
            [f"    ... and {more} more"] if more > 0 else []
        )


@dataclass(frozen=True)
class BenchCluster:
    """Where the pods run: the launcher's kubeconfig, and the pods and Services of the
    training namespace as the cluster has them now."""

    kubeconfig: Path
    pods: Callable[[], list[dict[str, Any]]]
    services: Callable[[], list[dict[str, Any]]]
    plane: ControlPlane


@contextmanager
def on_control_plane(root: Path, *, cpu: str, memory: str) -> Iterator[BenchCluster]:
    """The real control plane, the shipped RBAC applied, one node agent with ``cpu`` and
    ``memory`` for the pods; the launcher acts as the worker's service account that the
    RoleBinding names."""
    (root / "plane").mkdir()
    with control_plane(root / "plane") as plane, plane.client() as api:
        apply_shipped(plane)
        worker = worker_account()
        kubeconfig = service_account_kubeconfig(
            plane, root / "kubeconfig", account_namespace=worker["namespace"],
            account=worker["name"], namespace=NAMESPACE,
        )  # fmt: skip
        agent = NodeAgent(plane, "bench-node", root=root / "cluster", cpu=cpu, memory=memory,
                          memory_poll_seconds=MEMORY_POLL_SECONDS)  # fmt: skip

        def listed(kind: str) -> list[dict[str, Any]]:
            answer = api.get(f"/api/v1/namespaces/{NAMESPACE}/{kind}")
            answer.raise_for_status()
            return list(answer.json()["items"])

        with agent:
            yield BenchCluster(kubeconfig, lambda: listed("pods"), lambda: listed("services"),
                               plane)  # fmt: skip


def sample(cluster: BenchCluster, metadata: sqlalchemy.Engine) -> Sample:
    """The pods training now (by run) and Airflow's task instances by state."""
    per_run: Counter[str] = Counter()
    for pod in cluster.pods():
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        if any(s["name"] == TRAIN_CONTAINER and "running" in (s.get("state") or {})
               for s in statuses):  # fmt: skip
            per_run[pod["metadata"]["labels"][LABEL_RUN]] += 1
    with metadata.connect() as connection:
        rows = connection.execute(text("SELECT state, count(*) FROM task_instance GROUP BY state"))
        states: Counter[str] = Counter({str(state): count for state, count in rows})
    return Sample(
        trainings=sum(count == len(NODES) for count in per_run.values()),
        pods=sum(per_run.values()),
        states=states,
        available_gib=available_memory_gib(),
        load=os.getloadavg()[0],
    )


def available_memory_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 2**20
    return math.nan


def triggerer_cpu_seconds(marks: Marks) -> float:
    """CPU time used so far by the triggerer's processes (its trigger runner included)."""
    total = 0
    for proc in scan_processes():
        if proc.session in marks.sessions and "airflow triggerer" in proc.cmdline:
            with suppress(OSError):
                stat = Path(f"/proc/{proc.pid}/stat").read_text()
                fields = stat[stat.rindex(")") + 2 :].split()
                total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLOCK_TICKS


def rescheduled(metadata: sqlalchemy.Engine) -> int:
    """Task starts Airflow rescheduled (here: the DAG file's import in a task runner ran over
    ``[core] dagbag_import_timeout`` on a loaded machine, so the task was tried again later)."""
    with metadata.connect() as connection:
        return int(connection.execute(text("SELECT count(*) FROM task_reschedule")).scalar_one())


def failed_tasks(metadata: sqlalchemy.Engine) -> dict[tuple[str, str], list[str]]:
    """The failed task instances of each DAG run, as ``task_id[map index]``."""
    query = text("SELECT dag_id, run_id, task_id, map_index FROM task_instance "
                 "WHERE state = 'failed' ORDER BY task_id, map_index")  # fmt: skip
    failed: dict[tuple[str, str], list[str]] = {}
    with metadata.connect() as connection:
        for dag_id, run_id, task_id, index in connection.execute(query):
            name = task_id if index < 0 else f"{task_id}[{index}]"
            failed.setdefault((dag_id, run_id), []).append(name)
    return failed


def run_states(metadata: sqlalchemy.Engine) -> dict[tuple[str, str], tuple[str, float | None]]:
    """Every DAG run of the training tasks: (dag id, run id) -> (state, end as epoch seconds)."""
    query = text("SELECT dag_id, run_id, state, end_date FROM dag_run "
                 "WHERE dag_id LIKE 'octotrain_task_%'")  # fmt: skip
    with metadata.connect() as connection:
        return {
            (dag_id, run_id): (str(state), end.timestamp() if end else None)
            for dag_id, run_id, state, end in connection.execute(query)
        }


def container_processes(marks: Marks) -> list[str]:
    """The cluster's container processes still alive (children of this process that are not
    Airflow's components) and any training process, wherever it went."""
    me = os.getpid()
    alive = [proc for proc in scan_processes() if proc.state != "Z"]
    return [
        f"{proc.pid} {proc.cmdline[:100]}"
        for proc in alive
        if (proc.ppid == me and proc.session not in marks.sessions | marks.foreign)
        or marks.marker in proc.cmdline
    ]


def wait_for(seconds: float, left: Callable[[], list[str]]) -> list[str]:
    """Poll ``left`` until it returns nothing or ``seconds`` pass; what it last returned."""
    deadline = time.monotonic() + seconds
    while (found := left()) and time.monotonic() < deadline:
        time.sleep(1)
    return found


def healthy(url: str) -> bool:
    """Whether Airflow's scheduler and triggerer heartbeat."""
    health = httpx.get(f"{url}/api/v2/monitor/health", timeout=HTTP_SECONDS).json()
    return all(health[part]["status"] == "healthy" for part in ("scheduler", "triggerer"))


def dag_run(task: int, run: str) -> tuple[str, str]:
    return f"octotrain_task_{task}", run


def verify(
    started: list[tuple[int, str]],
    metadata: sqlalchemy.Engine,
    catalog_url: str,
    objects: Path,
) -> list[Check]:
    """Airflow's, the catalog's and the store's view of every run."""
    states, failed = run_states(metadata), failed_tasks(metadata)
    airflow = {run: states.get(dag_run(*run), ("missing", None))[0] for run in started}
    not_succeeded = [f"{task} {run}: {state}, failed: {failed.get(dag_run(task, run), [])}"
                     for (task, run), state in airflow.items() if state != "success"]  # fmt: skip
    checks = [Check(bool(started) and not not_succeeded,
                    f"every run succeeded in Airflow: {dict(Counter(airflow.values()))}",
                    not_succeeded)]  # fmt: skip
    checks.append(model_versions(started, catalog_url, objects))
    problems = []
    for task, run in started:
        logs = objects / "runs" / str(task) / run_key(run) / "logs"
        for node in NODES:
            names = NodeLogNames(task_id=task, node_index=node)
            missing = [name for name in names.always() if not (logs / name).is_file()]
            if missing:
                problems.append(f"{task} {run}: missing {missing}")
            elif f"trained {run} {node}\n" not in (logs / names.train).read_text():
                problems.append(f"{task} {run}: {names.train} lacks the training's last line")
    what = "each node's train, init and sidecar logs are in the store, with the training's line"
    checks.append(Check(not problems, what, problems))
    return checks


def model_versions(started: list[tuple[int, str]], catalog_url: str, objects: Path) -> Check:
    """Each run's catalog row succeeded with a model version of its own, holding both nodes'
    files of that run; as many versions as runs, numbers unique."""
    catalog = CatalogHook(catalog_url)
    try:
        with catalog.session() as session:
            repository = session.scalars(
                select(ModelRepository).where(ModelRepository.name == REPOSITORY)
            ).one()
            versions = {
                version.id: (version.version, version.object_prefix)
                for version in session.scalars(
                    select(ModelVersion).where(ModelVersion.repository_id == repository.id)
                )
            }
            runs = {
                (run.task_id, run.airflow_run_id): (run.state, run.model_version_id)
                for run in session.scalars(
                    select(Run).where(Run.task_id.in_({task for task, _ in started}))
                )
            }
    finally:
        catalog.dispose()
    problems = []
    owners: Counter[int] = Counter()
    for task, run in started:
        state, version_id = runs.get((task, run), (None, None))
        if state != RunState.SUCCESS or version_id not in versions:
            problems.append(f"{task} {run}: catalog run {state}, model version id {version_id}")
            continue
        owners[version_id] += 1
        prefix = versions[version_id][1]
        for node in NODES:
            model = objects / prefix / f"{node}.txt"
            if not model.is_file() or model.read_text() != run:
                problems.append(f"{task} {run}: its version {prefix} lacks {node}'s file")
    problems += [f"version id {ident} is the model of {count} runs"
                 for ident, count in owners.items() if count > 1]  # fmt: skip
    numbers = sorted(number for number, _ in versions.values())
    if len(set(numbers)) != len(numbers) or len(versions) != len(started):
        problems.append(f"{len(versions)} versions for {len(started)} runs, numbers {numbers}")
    what = f"every catalog run succeeded with a model version of its own ({len(versions)} versions)"
    return Check(not problems, what, problems)


def run_kubernetes(size: Size) -> bool:
    """Run the part and print its figures and checks; whether every check passed. The scratch
    folder (Airflow's and the pods' logs) is kept when a check failed."""
    # A SIGTERM (timeout, a CI runner) unwinds like Ctrl-C, so every process started is stopped.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    root = Path(tempfile.mkdtemp(prefix="octotrain-bench-scale-k8s-"))
    marker = f"octotrain-bench-scale-{uuid.uuid4().hex[:8]}"
    print(f"{size.trainings} two-node trainings of {size.seconds:g} s triggered at once "
          f"({size.tasks} tasks, {size.per_task} runs each at most); Kubernetes launcher "
          f"(deferrable, pods looked at every {size.pod_poll:g} s) on the tests' control plane; "
          f"{size.slots} worker slots (parallelism), "
          f"LocalExecutor, a triggerer, PostgreSQL; this machine: {os.cpu_count()} CPUs, "
          f"{available_memory_gib():.1f} GiB available; files in {root}", flush=True)  # fmt: skip
    checks: list[Check] = []
    leaks: list[str] = []
    try:
        with ExitStack() as stack:
            room = str(4 * size.trainings)  # every pod at once
            cluster = stack.enter_context(on_control_plane(root, cpu=room, memory=f"{room}Gi"))
            kubeconfig = cluster.kubeconfig
            config_file = root / "kubernetes.toml"
            config_file.write_text(
                KUBERNETES_TOML.format(cache=root / "node-cache", poll=size.pod_poll)
            )
            metadata_url = stack.enter_context(fresh_database("scale_meta"))
            catalog_url = stack.enter_context(fresh_database("scale_catalog"))
            objects = root / "state" / "objects"
            settings = {
                "OCTOTRAIN_STATE_DIR": str(root / "state"),
                "OCTOTRAIN_CATALOG_URL": catalog_url,
                "OCTOTRAIN_OBJECT_STORE_URL": f"file://{objects}",
                "OCTOTRAIN_LAUNCHER": "kubernetes",
                "OCTOTRAIN_KUBERNETES_NAMESPACE": NAMESPACE,
                "OCTOTRAIN_KUBERNETES_CONFIG_FILE": str(config_file),
                "AIRFLOW_CONN_KUBERNETES_DEFAULT": json.dumps(
                    {"conn_type": "kubernetes", "extra": {"kube_config_path": str(kubeconfig)}}
                ),
                "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
                "AIRFLOW__CORE__PARALLELISM": str(size.slots),
                "AIRFLOW__CORE__MAX_ACTIVE_RUNS_PER_DAG": str(size.per_task),
            }
            training = TRAINING.format(marker=marker, seconds=size.seconds)

            def prepare(catalog: CatalogHook, store: Any, _demo: object) -> list[int]:
                add_command_algorithm(catalog, ALGORITHM, training)
                with catalog.session() as session:
                    ModelRepositories(session, ADMIN, store).create(
                        "demo", {"name": REPOSITORY, "description": "bench.scale --kubernetes"}
                    )
                return [add_task(catalog, name=f"bench-scale-{number}", algorithm=ALGORITHM,
                                 parameters={}, model_repository=REPOSITORY)
                        for number in range(size.tasks)]  # fmt: skip

            marks = Marks(marker)
            marks.add_foreign_children()  # the control plane
            stack.callback(sweep, marks, leaks)
            server, task_ids = stack.enter_context(
                demo_airflow(root, settings, prepare, metadata_url=metadata_url,
                             components=COMPONENTS)
            )  # fmt: skip
            assert task_ids is not None
            marks.add_children()
            metadata = sqlalchemy.create_engine(metadata_url)
            stack.callback(metadata.dispose)
            started = trigger_and_follow(server, cluster, metadata, marks, task_ids, size,
                                         checks)  # fmt: skip
            checks += verify(started, metadata, catalog_url, objects)
            checks += leftovers(cluster, size, marks)
        checks.append(Check(not leaks, "nothing of Airflow's left once it was stopped", leaks))
    finally:
        passed = bool(checks) and all(check.passed for check in checks)
        for check in checks:
            print(*check.lines(), sep="\n")
        if passed:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"files kept in {root}")
    return passed


def trigger_and_follow(
    server: LiveAirflow,
    cluster: BenchCluster,
    metadata: sqlalchemy.Engine,
    marks: Marks,
    task_ids: list[int],
    size: Size,
    checks: list[Check],
) -> list[tuple[int, str]]:
    """Trigger the runs at once, sample until they have ended (or the timeout), print the
    figures and add the checks of the peaks; the runs started, as (task id, run id)."""
    server.wait_until("a healthy scheduler and triggerer", lambda: healthy(server.url))
    http = httpx.Client(base_url=server.url, headers=server.admin_headers(), timeout=HTTP_SECONDS)

    def trigger(number: int) -> str:
        task = task_ids[number // size.per_task]
        answer = http.post(f"/octotrain/api/v1/tasks/{task}/runs",
                           json={"request_id": f"scale-{number}"})  # fmt: skip
        answer.raise_for_status()
        return str(answer.json()["dag_run_id"])

    with http:
        first, took, run_ids = trigger_all(size.trainings, trigger)
    started = [(task_ids[number // size.per_task], run) for number, run in enumerate(run_ids)]
    wanted = {dag_run(task, run) for task, run in started}
    peaks, deadline, shown = Peaks(), time.monotonic() + size.timeout, time.monotonic()
    triggerer_cpu = triggerer_cpu_seconds(marks)
    while True:
        if dead := marks.dead_components():
            raise RuntimeError(f"Airflow components exited by themselves (pids {dead})\n"
                               + server.tail_of_logs())  # fmt: skip
        now = sample(cluster, metadata)
        peaks.add(now, time.time() - first, size.trainings)
        states = run_states(metadata)
        ended = sum(states.get(run, ("", None))[0] in ENDED for run in wanted)
        if time.monotonic() - shown >= PROGRESS_SECONDS:
            window, shown = time.monotonic() - shown, time.monotonic()
            triggerer_cpu, used = triggerer_cpu_seconds(marks), triggerer_cpu
            share = (triggerer_cpu - used) / window
            peaks.add_triggerer(share, now.states["deferred"])
            print(f"  {time.time() - first:5.0f} s: runs ended {ended}/{size.trainings}; "
                  f"trainings {now.trainings}, pods training {now.pods}; task instances "
                  f"running {now.states['running']}, queued {now.states['queued']}, deferred "
                  f"{now.states['deferred']}; triggerer {share:.0%} of a core; available "
                  f"{now.available_gib:.1f} GiB, load {now.load:.1f}", flush=True)  # fmt: skip
        if ended == len(wanted) or time.monotonic() > deadline:
            break
        time.sleep(SAMPLE_SECONDS)
    ends = [end for run, (_, end) in states.items() if run in wanted and end is not None]
    wall = max(ends, default=time.time()) - first
    print_figures(peaks, size, took, wall, rescheduled(metadata))
    checks += [
        Check(peaks.trainings >= size.trainings,
              f"all {size.trainings} trainings ran at once (peak {peaks.trainings}; raise "
              "--seconds if the first ended before the last began)"),
        Check(peaks.running <= size.slots,
              f"running task instances never above the {size.slots} slots (peak "
              f"{peaks.running}; deferred peak {peaks.deferred})"),
    ]  # fmt: skip
    return started


def leftovers(cluster: BenchCluster, size: Size, marks: Marks) -> list[Check]:
    """Once the runs have ended: no pod or Service in the cluster, no process of a container,
    a training or an Airflow task (each given a while to go)."""

    def cluster_objects() -> list[str]:
        pods = [f"pod {pod['metadata']['name']}" for pod in cluster.pods()]
        return pods + [f"service {svc['metadata']['name']}" for svc in cluster.services()]

    def processes_left() -> list[str]:
        tasks = [f"{proc.pid} {proc.cmdline[:100]}" for proc in marks.tasks()]
        return container_processes(marks) + tasks

    objects = wait_for(SETTLE_SECONDS, cluster_objects)
    processes = wait_for(SETTLE_SECONDS, processes_left)
    return [
        Check(not objects, "no pod or Service left in the cluster", objects),
        Check(not processes, "no container, training or Airflow task process left after the "
              "runs", processes),
    ]  # fmt: skip


def print_figures(peaks: Peaks, size: Size, took: float, wall: float, rescheduled: int) -> None:
    def at(elapsed: float | None) -> str:
        return "never" if elapsed is None else f"{elapsed:.0f} s"

    print(
        f"  triggered in {took:.1f} s; first training at {at(peaks.first_training)}, all "
        f"{size.trainings} at once at {at(peaks.all_training)} after the first trigger\n"
        f"  peak trainings at once (both pods training)  {peaks.trainings:6} of {size.trainings}\n"
        f"  peak pods training at once                   {peaks.pods:6}\n"
        f"  peak task instances running                  {peaks.running:6} (slots: {size.slots})\n"
        f"  peak task instances queued / deferred        {peaks.queued:6} / {peaks.deferred}\n"
        f"  wall: first trigger to last run end          {wall:6.0f} s\n"
        f"  triggerer CPU with {peaks.triggerer_deferred} nodes deferred: "
        f"{peaks.triggerer_share:.0%} of a core "
        f"({peaks.triggerer_share / max(1, peaks.triggerer_deferred):.2%} a node)\n"
        f"  task starts Airflow rescheduled (DAG import over its timeout): {rescheduled}\n"
        f"  lowest available memory {peaks.lowest_available_gib:.1f} GiB; highest load "
        f"average (1 min) {peaks.load:.1f}\n"
        f"ratio: peak trainings at once / trainings {peaks.trainings / size.trainings:.2f}x; "
        f"wall / training {wall / size.seconds:.2f}x (a {size.seconds:g} s training)",
        flush=True,
    )
