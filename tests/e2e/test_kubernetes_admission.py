"""All-or-nothing admission of a run's pods by Kueue, end to end on the tests' real control
plane with the real Kueue (``tests/k8s_kueue.py``): the launcher's pods of one run form a
Kueue pod group in their project's LocalQueue, which a ClusterQueue admits only as a whole.
With quota for one 2-node run, two runs started at once never overlap: the second's pods wait,
gated by Kueue, none of them running, until the first has ended; then it runs, and both
succeed. A run of a higher WorkloadPriorityClass preempts a running one: the preempted run
waits in the queue again and, readmitted once the other has ended, goes on from its
checkpoint."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import CustomObjectsApi, NetworkingV1Api

from hooks.kubernetes.kueue_workloads import queue_state_of
from octotrain.pods import KUEUE_GROUP, KUEUE_QUEUE, LABEL_TASK
from tests.config.rbac import KUEUE_RBAC_FILE, SHIPPED_PATHS, apply_shipped, worker_account
from tests.e2e.test_kubernetes_restarts import (
    checkpointed_pod,
    objects_of,
    steps_started_at,
    succeeded,
)
from tests.e2e.test_kubernetes_run import (
    NAMESPACE,
    NODES,
    Cluster,
    clustered,
    launch_in_background,
    names,
    results_of,
    stored,
)
from tests.k8s_control_plane import ControlPlane, create
from tests.k8s_kueue import Kueue, kueue

KUEUE_API = "/apis/kueue.x-k8s.io/v1beta2"
CLUSTER_QUEUE = "octotrain-e2e"
# Room for one 2-node run of the cpu-small spec (1 cpu a node, and its sidecar's request).
CPU_QUOTA = "3"
GATE = "kueue.x-k8s.io/admission"
# The ClusterRoleBinding of rbac-kueue.yaml that lets the launcher read ClusterQueues.
QUOTA_READER = "octotrain-launcher-kueue-quota"
KUEUE_PRIORITIES = """
[[kueue.priority_classes]]
minimum = 30
name = "octotrain-high"

[[kueue.priority_classes]]
minimum = -50
name = "octotrain-low"
"""
DEADLINE_SECONDS = 240
# How long deleted pods may take to be gone (Kueue removes its finalizer from each).
GONE_SECONDS = 60


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
            "spec": {"namespaceSelector": {},
                     "preemption": {"withinClusterQueue": "LowerPriority"},
                     "resourceGroups": [{
                "coveredResources": ["cpu", "memory"],
                "flavors": [{"name": "default-flavor", "resources": [
                    {"name": "cpu", "nominalQuota": CPU_QUOTA},
                    {"name": "memory", "nominalQuota": "64Gi"}]}]}]},
        })  # fmt: skip
        for name, value in (("octotrain-low", 100), ("octotrain-high", 1000)):
            create(k8s_api, f"{KUEUE_API}/workloadpriorityclasses", {
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                "metadata": {"name": name}, "value": value})  # fmt: skip
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
        apply_shipped(found.plane, KUEUE_RBAC_FILE)
        create(found.plane, f"{KUEUE_API}/namespaces/{NAMESPACE}/localqueues", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": "demo", "namespace": NAMESPACE},
            "spec": {"clusterQueue": CLUSTER_QUEUE}})  # fmt: skip
        deferrable = found.root / "deferrable.toml"
        (found.root / "kueue.toml").write_text(
            'admission = "kueue"\n' + deferrable.read_text() + KUEUE_PRIORITIES
        )
        yield found


@pytest.fixture(scope="module")
def env(cluster: Cluster) -> dict[str, str]:
    """The runner's environment with Kueue's admission on; checkpoints synced every half
    second, so that a preempted run finds one to go on from."""
    return cluster.env | {"OCTOTRAIN_KUBERNETES_CONFIG_FILE": str(cluster.root / "kueue.toml"),
                          "OCTOTRAIN_CHECKPOINT_SYNC_SECONDS": "0.5"}  # fmt: skip


@pytest.fixture(scope="module")
def tasks(cluster: Cluster, env: dict[str, str]) -> dict[str, int]:
    """The catalog of ``k8s_runner.py``'s setup."""
    completed = cluster.runner("dag", env=env)
    found = results_of(completed)
    assert found and found[0]["scenario"] == "setup", (completed.stdout + completed.stderr)[-4000:]
    return dict(found[0]["tasks"])


def _prepared(cluster: Cluster, env: dict[str, str], *task_names: str) -> dict[str, Path]:
    plans = {}
    for name in task_names:
        plans[name] = cluster.root / f"{name}-plan.json"
        prepared = cluster.runner("prepare", name, str(plans[name]), env=env)
        assert prepared.returncode == 0, prepared.stderr[-4000:]
    return plans


def test_two_runs_with_room_for_one_never_overlap_and_both_succeed(
    cluster: Cluster, env: dict[str, str], tasks: dict[str, int]
) -> None:
    plans = _prepared(cluster, env, "admitted-a", "admitted-b")
    seen: list[dict[str, Any]] = []
    workloads: list[list[dict[str, Any]]] = []
    done = threading.Event()
    watcher = threading.Thread(target=_watch, args=(cluster, seen, done, workloads), daemon=True)
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
    _said_why_it_waited({pod["group"] for pod in waited}, workloads)


def _said_why_it_waited(groups: set[str], workloads: list[list[dict[str, Any]]]) -> None:
    """The second run's Workload, as the pages read it (``hooks.kubernetes.kueue_workloads``): first
    in its queue, waiting for the ClusterQueue's cpu with the numbers; then admitted."""
    [group] = groups
    states = [
        queue_state_of(workload, sample, cluster_queue=CLUSTER_QUEUE)
        for sample in workloads for workload in sample if workload["metadata"]["name"] == group
    ]  # fmt: skip
    waiting = [state for state in states if state.admitted_at is None and state.reason]
    assert waiting, states[:3]
    assert waiting[-1].queue == f"demo (ClusterQueue {CLUSTER_QUEUE})"
    assert waiting[-1].position == 1 and "cpu" in waiting[-1].asked
    assert re.fullmatch(
        rf"waiting for quota: ClusterQueue {CLUSTER_QUEUE} lacks \S+ more cpu in flavor "
        r"default-flavor, the run needs \S+ cpu",
        waiting[-1].reason,
    ), waiting[-1].reason
    admitted = [state for state in states if state.admitted_at is not None]
    assert admitted and admitted[-1].waited_seconds(admitted[-1].admitted_at) > 1


def _watch(
    cluster: Cluster,
    seen: list[dict[str, Any]],
    done: threading.Event,
    workloads: list[list[dict[str, Any]]],
) -> None:
    """Every pod and Kueue Workload of the namespace, sampled every 0.2 s until ``done``."""
    custom = CustomObjectsApi(cluster.api.api_client)
    while not done.is_set():
        now = time.monotonic()
        workloads.append(custom.list_namespaced_custom_object(
            "kueue.x-k8s.io", "v1beta2", NAMESPACE, "workloads")["items"])  # fmt: skip
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


def test_a_higher_priority_run_preempts_and_the_preempted_one_resumes_from_its_checkpoint(
    cluster: Cluster, env: dict[str, str], tasks: dict[str, int]
) -> None:
    """The low-priority run trains; a high-priority one comes, with no room for both: Kueue
    evicts the low one (its pods deleted, its checkpoint synced in their grace period), admits
    the high one, and readmits the low one once the high one has ended; it goes on from its
    checkpoint, and both end with the model of an uninterrupted run."""
    plans = _prepared(cluster, env, "preempted-low", "preempting-high")
    low = {node: launch_in_background(cluster, plans["preempted-low"], node, 1, env)
           for node in NODES}  # fmt: skip
    checkpointed_pod(cluster, plans["preempted-low"], "distributed-0", 10, low)
    high = {node: launch_in_background(cluster, plans["preempting-high"], node, 1, env)
            for node in NODES}  # fmt: skip
    for name, workers in (("preempting-high", high), ("preempted-low", low)):
        result = succeeded(cluster, workers, plans[name], tasks[name], env)
        model = cluster.root / "fetched" / f"{name}-model.txt"
        cluster.store.get_file(f"{objects_of(plans[name]).output('distributed-0')}/model.txt",
                               model)  # fmt: skip
        assert model.read_text() == "weights after 80 steps"
        if name == "preempted-low":
            for node in NODES:
                train = stored(cluster, result, names(result, node).train)
                started_at = steps_started_at(train)
                assert started_at[0] == 0 and len(started_at) == 2, train
                assert started_at[1] > 10, train  # from its checkpoint
            ended = stored(cluster, result, names(result, "distributed-0").supplemental)
            assert "preempted" in ended.lower(), ended


def test_a_run_larger_than_its_cluster_queue_is_refused_before_anything_is_made(
    cluster: Cluster, env: dict[str, str], tasks: dict[str, int]
) -> None:
    """Four nodes of 1 cpu against a ClusterQueue of 3: the run's ``stage_data`` reads the
    ClusterQueue behind the project's LocalQueue (the ClusterRole of ``rbac-kueue.yaml``) and
    refuses the run with the numbers; nothing of it is made."""
    assert cluster.plane is not None
    plan = cluster.root / "too-large-plan.json"
    refused = cluster.runner("prepare", "too-large", str(plan), env=env)
    assert refused.returncode != 0
    assert re.search(
        rf"the run does not fit in the LocalQueue 'demo': ClusterQueue {CLUSTER_QUEUE} can give "
        rf"at most {CPU_QUOTA} cpu in flavor default-flavor \(the run needs [0-9.]+ cpu\): "
        "Kueue would never admit the run", refused.stderr
    ), refused.stderr[-3000:]  # fmt: skip
    run = _plan(plan)
    assert not cluster.store.list(f"runs/{run['task_id']}/{run['run_key']}/")
    selector = f"{LABEL_TASK}={tasks['too-large']}"
    assert cluster.pods_of(tasks["too-large"]) == []
    assert cluster.api.list_namespaced_service(NAMESPACE, label_selector=selector).items == []
    policies = NetworkingV1Api(cluster.api.api_client).list_namespaced_network_policy
    assert policies(NAMESPACE, label_selector=selector).items == []
    assert _worker_reads(cluster, "clusterqueues") == {"get"}  # what rbac-kueue.yaml grants


def test_without_reading_its_cluster_queue_kueue_s_own_verdict_fails_the_run_at_launch(
    cluster: Cluster, env: dict[str, str], tasks: dict[str, int]
) -> None:
    """The ClusterRole not granted: ``stage_data`` cannot tell, the pods are made, Kueue marks
    the Workload inadmissible, and the nodes' launch tasks fail the run with Kueue's numbers
    instead of waiting a week; no pod is left."""
    assert cluster.plane is not None
    with cluster.plane.client() as api:
        gone = api.delete(f"{SHIPPED_PATHS['ClusterRoleBinding']}/{QUOTA_READER}")
    assert gone.status_code == 200, gone.text
    try:
        plan = _prepared(cluster, env, "four-nodes")["four-nodes"]
    finally:
        apply_shipped(cluster.plane, KUEUE_RBAC_FILE)
    nodes = _plan(plan)["node_indices"]
    workers = {node: launch_in_background(cluster, plan, node, 1, env) for node in nodes}
    outputs = {node: worker.communicate(timeout=DEADLINE_SECONDS) for node, worker in
               workers.items()}  # fmt: skip
    assert all(worker.returncode != 0 for worker in workers.values()), outputs
    said = "".join((out or "") + (err or "") for out, err in outputs.values())
    assert re.search(
        rf"never admitted: ClusterQueue {CLUSTER_QUEUE} has at most {CPU_QUOTA} cpu in flavor "
        r"default-flavor, the run needs [0-9.]+ cpu", said
    ), said[-4000:]  # fmt: skip
    collected = cluster.runner("collect", str(plan), env=env)
    assert collected.returncode == 0, collected.stderr[-4000:]
    selector = f"{LABEL_TASK}={tasks['four-nodes']}"
    deadline = time.monotonic() + GONE_SECONDS  # Kueue lets its finalizer of each pod go
    while left := cluster.api.list_namespaced_pod(NAMESPACE, label_selector=selector).items:
        assert time.monotonic() < deadline, [
            (pod.metadata.name, pod.metadata.deletion_timestamp, pod.metadata.finalizers)
            for pod in left
        ]
        time.sleep(0.5)


def test_a_project_whose_queue_does_not_exist_is_refused_before_anything_is_made(
    cluster: Cluster, env: dict[str, str], tasks: dict[str, int]
) -> None:
    """The run's ``stage_data`` reads its project's LocalQueue (what ``rbac-kueue.yaml``
    allows): missing, the run fails at once, saying so, and leaves nothing behind."""
    assert cluster.plane is not None
    missing = cluster.root / "missing-queue.toml"
    deferrable = (cluster.root / "deferrable.toml").read_text()
    queue = '[kueue]\nlocal_queue = "no-{project}"\n'
    missing.write_text(f'admission = "kueue"\n{deferrable}\n{queue}')
    plan = cluster.root / "missing-queue-plan.json"
    refused = cluster.runner(
        "prepare",
        "admitted-without-queue",
        str(plan),
        env=env | {"OCTOTRAIN_KUBERNETES_CONFIG_FILE": str(missing)},
    )
    assert refused.returncode != 0
    assert (
        "the LocalQueue 'no-demo' of project demo does not exist in the namespace octotrain: its "
        "runs would never be admitted" in refused.stderr
    ), refused.stderr[-3000:]
    run = _plan(plan)
    assert not cluster.store.list(f"runs/{run['task_id']}/{run['run_key']}/")
    assert _worker_reads(cluster, "localqueues") == {"get"}  # what rbac-kueue.yaml grants


def _worker_reads(cluster: Cluster, resource: str) -> set[str]:
    """The verbs the worker's service account used on ``resource``, by the API server's audit
    log."""
    assert cluster.plane is not None
    account = worker_account()
    user = f"system:serviceaccount:{account['namespace']}:{account['name']}"
    return {event["verb"] for event in cluster.plane.audited(user)
            if (event.get("objectRef") or {}).get("resource") == resource}  # fmt: skip


def _plan(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))
