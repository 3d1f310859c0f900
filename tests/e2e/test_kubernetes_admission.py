"""All-or-nothing admission of a run's pods by Kueue, end to end on the tests' real control
plane with the real Kueue (``tests/k8s_kueue.py``): the launcher's pods of one run form a
Kueue pod group in their project's LocalQueue, which a ClusterQueue admits only as a whole.
With quota for one 2-node run, two runs started at once never overlap: the second's pods wait,
gated by Kueue, none of them running, until the first has ended; then it runs, and both
succeed."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from octotrain.pods import KUEUE_GROUP, KUEUE_QUEUE, LABEL_TASK
from tests.e2e.test_kubernetes_run import (
    NAMESPACE,
    NODES,
    Cluster,
    clustered,
    launch_in_background,
    results_of,
)
from tests.k8s_control_plane import ControlPlane, create
from tests.k8s_kueue import Kueue, kueue

KUEUE_API = "/apis/kueue.x-k8s.io/v1beta2"
CLUSTER_QUEUE = "octotrain-e2e"
# Room for one 2-node run of the cpu-small spec (1 cpu a node, and its sidecar's request).
CPU_QUOTA = "3"
GATE = "kueue.x-k8s.io/admission"
DEADLINE_SECONDS = 240


@pytest.fixture(scope="module")
def admitting(k8s_api: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kueue]:
    """Kueue, with a ClusterQueue of quota for one run and the demo project's LocalQueue."""
    with kueue(k8s_api, tmp_path_factory.mktemp("kueue")) as running:
        create(k8s_api, f"{KUEUE_API}/resourceflavors", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": "default-flavor"}})  # fmt: skip
        create(k8s_api, f"{KUEUE_API}/clusterqueues", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": CLUSTER_QUEUE},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{
                "coveredResources": ["cpu", "memory"],
                "flavors": [{"name": "default-flavor", "resources": [
                    {"name": "cpu", "nominalQuota": CPU_QUOTA},
                    {"name": "memory", "nominalQuota": "64Gi"}]}]}]},
        })  # fmt: skip
        yield running


@pytest.fixture(scope="module", params=["control-plane"])
def cluster(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    admitting: Kueue,
) -> Iterator[Cluster]:
    """The control plane with Kueue, the demo project's LocalQueue, and a configuration that
    has Kueue admit the runs' pods (``kueue.toml``)."""
    with clustered(request, tmp_path_factory) as found:
        assert found.plane is not None
        create(found.plane, f"{KUEUE_API}/namespaces/{NAMESPACE}/localqueues", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": "demo", "namespace": NAMESPACE},
            "spec": {"clusterQueue": CLUSTER_QUEUE}})  # fmt: skip
        deferrable = found.root / "deferrable.toml"
        (found.root / "kueue.toml").write_text('admission = "kueue"\n' + deferrable.read_text())
        yield found


def test_two_runs_with_room_for_one_never_overlap_and_both_succeed(cluster: Cluster) -> None:
    env = cluster.env | {"OCTOTRAIN_KUBERNETES_CONFIG_FILE": str(cluster.root / "kueue.toml")}
    completed = cluster.runner("dag", env=env)
    tasks = dict(results_of(completed)[0]["tasks"])
    plans = {}
    for name in ("admitted-a", "admitted-b"):
        plans[name] = cluster.root / f"{name}-plan.json"
        prepared = cluster.runner("prepare", name, str(plans[name]), env=env)
        assert prepared.returncode == 0, prepared.stderr[-4000:]
    seen: list[dict[str, Any]] = []
    done = threading.Event()
    watcher = threading.Thread(target=_watch, args=(cluster, seen, done), daemon=True)
    watcher.start()
    workers = {(name, node): launch_in_background(cluster, plan, node, 1, env)
               for name, plan in plans.items() for node in NODES}  # fmt: skip
    try:
        outputs = {key: worker.communicate(timeout=DEADLINE_SECONDS)[0]
                   for key, worker in workers.items()}  # fmt: skip
    finally:
        done.set()
        watcher.join()
    assert all(worker.returncode == 0 for worker in workers.values()), outputs
    for plan in plans.values():
        collected = cluster.runner("collect", str(plan), env=env)
        assert results_of(collected) == [{"failed_nodes": []}], collected.stderr[-4000:]
    by_task = {tasks[name]: name for name in plans}
    running = _training_spans(seen, by_task)
    first, second = sorted(running, key=lambda name: running[name][0])
    # The second run's pods started training only once the first's had all ended.
    assert running[second][0] >= running[first][1], running
    # ... and meanwhile they waited, gated by Kueue, in their project's queue.
    waited = [pod for pod in seen if by_task.get(pod["task"]) == second and pod["gated"]]
    assert {pod["node"] for pod in waited} == set(NODES), seen[-6:]
    assert all(pod["queue"] == "demo" and pod["group"] for pod in waited)
    _no_partial_start(seen, by_task)


def _watch(cluster: Cluster, seen: list[dict[str, Any]], done: threading.Event) -> None:
    """Every pod of the namespace, sampled every 0.2 s until ``done``."""
    while not done.is_set():
        now = time.monotonic()
        for pod in cluster.api.list_namespaced_pod(NAMESPACE).items:
            labels = pod.metadata.labels or {}
            statuses = pod.status.container_statuses or []
            seen.append({
                "at": now, "task": int(labels.get(LABEL_TASK, 0)),
                "node": labels.get("octotrain.io/node"), "queue": labels.get(KUEUE_QUEUE),
                "group": labels.get(KUEUE_GROUP),
                "gated": any(g.name == GATE for g in pod.spec.scheduling_gates or []),
                "training": any(s.name == "base" and s.state.running is not None
                                for s in statuses),
            })  # fmt: skip
        done.wait(0.2)


def _training_spans(
    seen: list[dict[str, Any]], by_task: dict[int, str]
) -> dict[str, tuple[float, float]]:
    """When each run's training containers were first and last seen running."""
    spans: dict[str, tuple[float, float]] = {}
    for pod in seen:
        name = by_task.get(pod["task"])
        if name is None or not pod["training"]:
            continue
        start, end = spans.get(name, (pod["at"], pod["at"]))
        spans[name] = (min(start, pod["at"]), max(end, pod["at"]))
    assert set(spans) == set(by_task.values()), spans
    return spans


def _no_partial_start(seen: list[dict[str, Any]], by_task: dict[int, str]) -> None:
    """No sample shows one pod of a run admitted (ungated) while its other pod is gated."""
    samples: dict[tuple[float, int], list[bool]] = {}
    for pod in seen:
        if pod["task"] in by_task:
            samples.setdefault((pod["at"], pod["task"]), []).append(pod["gated"])
    partial = [key for key, gated in samples.items() if len(gated) == 2 and any(gated)
               and not all(gated)]  # fmt: skip
    # Kueue ungates a group's pods one request after the other: a sample may fall between.
    assert len(partial) <= 2, partial
