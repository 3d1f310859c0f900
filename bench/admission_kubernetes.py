"""bench.admission's Kubernetes phases: the same burst on the tests' real control plane
(``tests/k8s_control_plane.py``; one node agent of ``--cores`` cpu runs the pods as processes of
this machine), with Kueue admitting each run's pods as one group (phase ``kueue``) and without
it (phase ``k8s-off``: the kube-scheduler places each pod as it comes, as before).

With Kueue (built from ``sigs.k8s.io/kueue``, ``tests/k8s_kueue.py``, fair sharing on): one
ClusterQueue per project in a cohort, each with its weight's share of the node's cpu as nominal
quota and the same weight for fair sharing, borrowing unlimited (an idle team's quota is used);
a LocalQueue per project; the tasks' priorities map to three WorkloadPriorityClasses. Pods of
one machine share its network, so the nodes of a run meet on a port derived from the run's id
instead of ``MASTER_PORT`` (a cluster gives each pod its own address).

Sampled every second from the cluster (pods and Workloads) and the catalog (runs):

- partial starts: a run some of whose training containers started while others had not (over
  ``PARTIAL_SECONDS`` apart, or never);
- deadlocks (Kueue): Workloads wait, none holds quota, no pod trains, and one of them would fit
  the node, for over ``DEADLOCK_SECONDS`` on end (shorter gaps are Kueue's reaction to a run's
  end, reported apart as the longest idle gap);
- cpu used while Workloads wait (the training pods' requests, as Kueue counts them) against
  what they could use (the quota held plus the waiting Workloads that fit what is left);
- each project's share of the training pods' seconds while both have Workloads waiting;
- the time until the last run ended, and the failed runs.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy
from sqlalchemy import select

from bench.admission_burst import (
    PARTIAL_SECONDS,
    PRIORITIES,
    SHAPES,
    WEIGHTS,
    Figures,
    burst_airflow,
    trigger_burst,
)
from bench.load import ENDED, fresh_database
from bench.scale_kubernetes import (
    KUBERNETES_TOML,
    NAMESPACE,
    BenchCluster,
    on_control_plane,
)
from hooks.kubernetes.kueue_quota import pod_requests
from octotrain.catalog.models import Run, as_utc
from octotrain.pods import LABEL_RUN, LABEL_TASK, TRAIN_CONTAINER
from tests.config.rbac import KUEUE_RBAC_FILE, apply_shipped
from tests.k8s_control_plane import create
from tests.k8s_kueue import kueue

KUBERNETES_PHASES = ("kueue", "k8s-off")
SAMPLE_SECONDS = 1.0
KUEUE_API = "/apis/kueue.x-k8s.io/v1beta2"
COHORT = "bench-admission"
FLAVOR = "default-flavor"
MEMORY = "64Gi"  # the node's and the queues': cpu is what the burst contends for
# A distributed training on one machine: the nodes of a run meet on a port of their own.
RUN_PORT = '20000 + int(hashlib.sha256(os.environ["RUN_ID"].encode()).hexdigest(), 16) % 20000'
PRIORITY_CLASSES = (("octotrain-high", 10, 300), ("octotrain-normal", 0, 200),
                    ("octotrain-low", -50, 100))  # fmt: skip
FAIR_SHARING = {"fairSharing": {"preemptionStrategies": [
    "LessThanOrEqualToFinalShare", "LessThanInitialShare"]}}  # fmt: skip


def run_kubernetes_phase(phase: str, arguments: argparse.Namespace) -> Figures:
    """One Kubernetes phase of the burst, from a fresh control plane to its figures."""
    root = Path(tempfile.mkdtemp(prefix=f"octotrain-bench-admission-{phase}-"))
    leaks: list[str] = []
    with ExitStack() as stack:
        cluster = stack.enter_context(
            on_control_plane(root, cpu=str(arguments.cores), memory=MEMORY)
        )
        queued = phase == "kueue"
        if queued:
            stack.enter_context(kueued(cluster, root, cores=arguments.cores))
        config_file = root / "kubernetes.toml"
        config_file.write_text(kubernetes_toml(root, queued=queued))
        metadata_url = stack.enter_context(fresh_database("admission_k8s_meta"))
        catalog_url = stack.enter_context(fresh_database("admission_k8s_catalog"))
        settings = {
            "OCTOTRAIN_STATE_DIR": str(root / "state"),
            "OCTOTRAIN_CATALOG_URL": catalog_url,
            "OCTOTRAIN_OBJECT_STORE_URL": f"file://{root / 'state' / 'objects'}",
            "OCTOTRAIN_LAUNCHER": "kubernetes",
            "OCTOTRAIN_KUBERNETES_NAMESPACE": NAMESPACE,
            "OCTOTRAIN_KUBERNETES_CONFIG_FILE": str(config_file),
            "AIRFLOW_CONN_KUBERNETES_DEFAULT": json.dumps(
                {"conn_type": "kubernetes", "extra": {"kube_config_path": str(cluster.kubeconfig)}}
            ),
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": str(arguments.slots),
            "AIRFLOW__CORE__MAX_ACTIVE_RUNS_PER_DAG": str(arguments.runs),
        }
        started = burst_airflow(stack, root, settings, arguments, port=RUN_PORT,
                                metadata_url=metadata_url, leaks=leaks,
                                foreign_children=True)  # fmt: skip
        task_ids = started.task_ids
        first, run_ids = trigger_burst(started.server, task_ids, arguments.runs)
        shapes = dict(zip(task_ids, itertools.product(WEIGHTS, SHAPES, PRIORITIES), strict=True))
        figures = follow(cluster, started.catalog, set(run_ids), shapes, arguments, queued=queued)
        figures.wall_seconds -= first
    if leaks:
        print(f"  left after the phase (killed): {leaks[:5]}", flush=True)
    if figures.failed:
        print(f"  files kept in {root}", flush=True)
    else:
        shutil.rmtree(root, ignore_errors=True)
    return figures


def kubernetes_toml(root: Path, *, queued: bool) -> str:
    """The launcher's configuration: deferrable pods, the store from the worker's environment;
    with Kueue, its admission and the priority classes."""
    plain = KUBERNETES_TOML.format(cache=root / "node-cache", poll=2)
    if not queued:
        return plain
    classes = "".join(f'\n[[kueue.priority_classes]]\nminimum = {minimum}\nname = "{name}"\n'
                      for name, minimum, _value in PRIORITY_CLASSES)  # fmt: skip
    return f'admission = "kueue"\n{plain}{classes}'


@contextmanager
def kueued(cluster: BenchCluster, root: Path, *, cores: int) -> Iterator[None]:
    """Kueue with fair sharing, a ClusterQueue and LocalQueue per project (nominal cpu by
    weight, in one cohort), the priority classes, and the launcher's Kueue RBAC."""
    plane = cluster.plane
    with kueue(plane, root / "kueue", configuration=FAIR_SHARING):
        apply_shipped(plane, KUEUE_RBAC_FILE)
        create(plane, f"{KUEUE_API}/resourceflavors", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": FLAVOR}})  # fmt: skip
        total = sum(WEIGHTS.values())
        for project, weight in WEIGHTS.items():
            nominal = f"{int(cores * 1000 * weight / total)}m"
            create(plane, f"{KUEUE_API}/clusterqueues", {
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                "metadata": {"name": f"bench-{project}"},
                "spec": {"namespaceSelector": {}, "cohortName": COHORT,
                         "fairSharing": {"weight": str(weight)},
                         "resourceGroups": [{"coveredResources": ["cpu", "memory"],
                                             "flavors": [{"name": FLAVOR, "resources": [
                                                 {"name": "cpu", "nominalQuota": nominal},
                                                 {"name": "memory", "nominalQuota": MEMORY}]}]}]},
            })  # fmt: skip
            create(plane, f"{KUEUE_API}/namespaces/{NAMESPACE}/localqueues", {
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                "metadata": {"name": project, "namespace": NAMESPACE},
                "spec": {"clusterQueue": f"bench-{project}"}})  # fmt: skip
        for name, _minimum, value in PRIORITY_CLASSES:
            create(plane, f"{KUEUE_API}/workloadpriorityclasses", {
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                "metadata": {"name": name}, "value": value})  # fmt: skip
        yield


def follow(
    cluster: BenchCluster,
    catalog: sqlalchemy.Engine,
    wanted: set[str],
    shapes: dict[int, tuple[str, int, int]],
    arguments: argparse.Namespace,
    *,
    queued: bool,
) -> Figures:
    """Sample until every run has ended (or the timeout); the figures (``wall_seconds`` is the
    last run's end, as epoch seconds)."""
    figures = Figures()
    starts: dict[str, dict[str, float]] = defaultdict(dict)  # run label -> pod -> start
    nodes_of: dict[str, int] = {}
    deadline, last = time.monotonic() + arguments.timeout, time.time()
    with cluster.plane.client() as api:
        while True:
            time.sleep(SAMPLE_SECONDS)
            now = time.time()
            pods = cluster.pods()
            for pod in pods:
                labels = pod["metadata"]["labels"]
                nodes_of[labels[LABEL_RUN]] = shapes[int(labels[LABEL_TASK])][1]
                if (started := train_started(pod)) is not None:
                    starts[labels[LABEL_RUN]].setdefault(pod["metadata"]["name"], started)
            if queued:
                answer = api.get(f"{KUEUE_API}/namespaces/{NAMESPACE}/workloads")
                answer.raise_for_status()
                account(figures, pods, answer.json()["items"], shapes, arguments.cores,
                        now - last)  # fmt: skip
            last = now
            runs = read_runs(catalog, wanted)
            if len(runs) == len(wanted) and all(run.state.value in ENDED for run in runs):
                break
            if time.monotonic() > deadline:
                print(f"  timed out after {arguments.timeout:.0f} s", flush=True)
                break
    ends = [as_utc(run.ended_at).timestamp() for run in runs if run.ended_at]
    figures.wall_seconds = max(ends, default=time.time())
    failed = [run for run in runs if run.state.value != "success"]
    figures.failed = len(failed)
    for run in failed:
        print(f"  run {run.id} ({run.airflow_run_id}) {run.state.value}: {run.message}", flush=True)
    for run, started in starts.items():
        spread = max(started.values()) - min(started.values())
        figures.spread_max = max(figures.spread_max, spread)
        figures.partial += len(started) < nodes_of[run] or spread > PARTIAL_SECONDS
    return figures


def account(
    figures: Figures,
    pods: list[dict[str, Any]],
    workloads: list[dict[str, Any]],
    shapes: dict[int, tuple[str, int, int]],
    cores: int,
    seconds: float,
) -> None:
    """Add one sample of Kueue's view: quota held and waiting, cpu training."""
    live = [w for w in workloads if not has_condition(w, "Finished")]
    held = [w for w in live if has_condition(w, "QuotaReserved")]
    waiting = [w for w in live if not has_condition(w, "QuotaReserved")]
    if not waiting:
        figures.note_idle(seconds, idle=False)
        return
    training = [pod for pod in pods if train_running(pod)]
    free = cores - sum(demand(w) for w in held)
    could = []
    for workload in sorted(waiting, key=demand):
        if demand(workload) <= free:
            could.append(workload)
            free -= demand(workload)
    figures.note_idle(seconds, idle=not held and not training and bool(could))
    figures.used += sum(pod_requests(pod).get("cpu", 0.0) for pod in training) * seconds
    usable = sum(demand(w) for w in held) + sum(demand(w) for w in could)
    figures.usable += min(usable, cores) * seconds
    if {w["spec"].get("queueName") for w in waiting} >= set(WEIGHTS):
        for pod in training:
            project = shapes[int(pod["metadata"]["labels"][LABEL_TASK])][0]
            figures.contended[project] += seconds


def demand(workload: dict[str, Any]) -> float:
    """The cpu a Workload asks for (its pod sets, as Kueue sums them)."""
    return sum(
        int(pod_set.get("count") or 0) * pod_requests(pod_set["template"]).get("cpu", 0.0)
        for pod_set in workload["spec"].get("podSets") or []
    )


def has_condition(workload: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (workload.get("status") or {}).get("conditions") or [])  # fmt: skip


def train_running(pod: dict[str, Any]) -> bool:
    return any(status["name"] == TRAIN_CONTAINER and "running" in (status.get("state") or {})
               for status in (pod.get("status") or {}).get("containerStatuses") or [])  # fmt: skip


def train_started(pod: dict[str, Any]) -> float | None:
    """When the pod's training container started (running or ended since), as epoch seconds."""
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status["name"] != TRAIN_CONTAINER:
            continue
        for state in ("running", "terminated"):
            if started := ((status.get("state") or {}).get(state) or {}).get("startedAt"):
                return datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp()
    return None


def read_runs(catalog: sqlalchemy.Engine, wanted: set[str]) -> list[Run]:
    with sqlalchemy.orm.Session(catalog) as session:
        runs = list(session.scalars(select(Run).where(Run.airflow_run_id.in_(wanted))))
        session.expunge_all()
    return runs
