"""Retries by failure class with the Kubernetes launcher, end to end on the tests' real control
plane: the real operators, triggers and pods (``tests/e2e/k8s_runner.py``: each node's launch
task in a process of its own, its deferrals run there as the triggerer would), the real
scheduler and controller-manager, and the node agent (``tests/k8s_node_agent``) as the
kubelet. A 2-node run whose node 1 is evicted mid-training by its kubelet (under node pressure) is
started again, both nodes,
from their checkpoints, and finishes with the model of an uninterrupted run, as does one whose
machine dies under both nodes (its node goes NotReady, the controller-manager evicts its pods,
which nothing will ever confirm); the task's restart limit is honoured; a training that fails
on its own is not started again (``test_kubernetes_run``'s failing nodes, which now also say
their failure class); and the kube-apiserver restarted mid-run costs nothing: no pod is made
twice, no step is lost."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hooks.runs.checkpoint_sync import read_manifest
from octotrain.pods import LABEL_NODE
from octotrain.run_layout import RunObjects
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
from tests.k8s_control_plane import wait_untainted
from tests.k8s_node_agent.agent import NodeAgent

# Far longer than a 2-node run of 16 s takes, restarted, on a busy machine (a lost node: 70 s more).
DEADLINE_SECONDS = 180


@pytest.fixture(scope="module", params=["control-plane"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """The tests' real control plane, with one node of the node agent."""
    with clustered(request, tmp_path_factory) as found:
        yield found


@pytest.fixture(scope="module")
def tasks(cluster: Cluster) -> dict[str, int]:
    """The catalog of ``k8s_runner.py``'s setup (no scenario run through a DAG)."""
    completed = cluster.runner("dag")
    found = results_of(completed)
    assert found and found[0]["scenario"] == "setup", (completed.stdout + completed.stderr)[-4000:]
    return dict(found[0]["tasks"])


@pytest.fixture(params=["deferrable", "synchronous"])
def mode(request: pytest.FixtureRequest) -> str:
    """Launch tasks that defer (their triggers see a restart) or follow their pods themselves
    (their restart watchers do)."""
    return str(request.param)


@pytest.fixture
def env(cluster: Cluster, mode: str) -> Iterator[dict[str, str]]:
    """Checkpoints synced every half second, so that an eviction finds one to go on from."""
    yield cluster.env_for(mode) | {"OCTOTRAIN_CHECKPOINT_SYNC_SECONDS": "0.5"}


def _task(name: str, mode: str) -> str:
    """The task of a scenario in a mode (a run per task: ``prepare`` names it after it)."""
    return name if mode == "deferrable" else f"{name}-sync"


def _prepare(cluster: Cluster, task: str, env: dict[str, str]) -> Path:
    plan = cluster.root / f"{task}-plan.json"
    prepared = cluster.runner("prepare", task, str(plan), env=env)
    assert prepared.returncode == 0, prepared.stderr[-4000:]
    return plan


def objects_of(plan: Path) -> RunObjects:
    document = json.loads(plan.read_text())
    return RunObjects(document["task_id"], document["run_key"])


def checkpointed_pod(
    cluster: Cluster,
    plan: Path,
    node: str,
    after_step: int,
    workers: dict[str, Any],
) -> str:
    """The name of ``node``'s running pod (not one being deleted), once its checkpoint in the
    store has passed ``after_step`` steps (while every node's launch task runs)."""
    objects, deadline = objects_of(plan), time.monotonic() + DEADLINE_SECONDS
    while True:
        manifest = read_manifest(cluster.store, objects, node)
        steps = [int(name.removeprefix("step-").removesuffix(".txt"))
                 for name in (manifest.files if manifest else {})]  # fmt: skip
        pods = [pod for pod in cluster.pods_of(objects.task_id)
                if pod.metadata.labels.get(LABEL_NODE) == node and _running(pod)]  # fmt: skip
        if pods and max(steps, default=0) > after_step:
            return str(pods[0].metadata.name)
        assert time.monotonic() < deadline, f"{node} never checkpointed past step {after_step}"
        ended = any(worker.poll() is not None for worker in workers.values())
        assert not ended, f"launch tasks ended before {node} checkpointed: {_ended(workers)}"
        time.sleep(0.2)


def _running(pod: Any) -> bool:
    return bool(pod.status.phase == "Running" and pod.metadata.deletion_timestamp is None)


def _ended(workers: dict[str, Any]) -> dict[str, str]:
    return {
        node: worker.communicate(timeout=DEADLINE_SECONDS)[0] for node, worker in workers.items()
    }


def succeeded(
    cluster: Cluster, workers: dict[str, Any], plan: Path, task_id: int, env: dict[str, str]
) -> dict[str, Any]:
    """The run (as ``stored`` takes it) once every node's launch task ended well and the logs
    were collected with no node failed."""
    outputs = _ended(workers)
    assert all(worker.returncode == 0 for worker in workers.values()), outputs
    collected = cluster.runner("collect", str(plan), env=env)
    assert results_of(collected) == [{"failed_nodes": []}], collected.stderr[-4000:]
    return {"task_id": task_id, "run": {"run_key": objects_of(plan).run_key}}


def steps_started_at(train: str) -> list[int]:
    """The step each start of the training went on from (0: from scratch)."""
    return [
        int(line.rsplit(" ", 1)[1]) for line in train.splitlines() if " starts at step " in line
    ]


def _ended_as_if_uninterrupted(cluster: Cluster, plan: Path, task: str, task_id: int) -> None:
    """The model an uninterrupted run writes; each node's pod made twice, none left."""
    model = cluster.root / "fetched" / f"{task}-model.txt"
    cluster.store.get_file(f"{objects_of(plan).output('distributed-0')}/model.txt", model)
    assert model.read_text() == "weights after 80 steps"
    assert len(cluster.created_for(task_id)) == 4
    assert cluster.pods_of(task_id) == []


# Synchronous launch tasks: their restart watchers see the evicted pod's end. A deferred one's
# trigger sees a restart in the lost node's test and the restart limit's (an eviction through
# the Eviction API, as kubectl drain asks), its pod deleted before its end could be read.
@pytest.mark.parametrize("mode", ["synchronous"])
def test_a_node_evicted_mid_training_restarts_the_run_from_its_checkpoints(
    cluster: Cluster,
    tasks: dict[str, int],
    env: dict[str, str],
    mode: str,
) -> None:
    task = _task("restarted", mode)
    plan = _prepare(cluster, task, env)
    workers = {node: launch_in_background(cluster, plan, node, 1, env) for node in NODES}
    evicted = checkpointed_pod(cluster, plan, "distributed-1", 40, workers)  # half way
    cluster.agents[-1].evict(NAMESPACE, evicted)  # by the kubelet, under node pressure
    why = "TerminationByKubelet: The node was low on resource"
    result = succeeded(cluster, workers, plan, tasks[task], env)
    for node in NODES:
        train = stored(cluster, result, names(result, node).train)
        started_at = steps_started_at(train)
        assert started_at[0] == 0 and len(started_at) == 2, train
        assert started_at[1] > 40, train  # from its checkpoint, not from scratch
        assert "step 80" in train
        assert "restart 1 of at most 2" in stored(cluster, result, names(result, node).supplemental)
    lost = stored(cluster, result, names(result, "distributed-1").supplemental)
    assert lost.startswith("node distributed-1 ended normally after the run was restarted")
    assert f"its pod was lost ({why}" in lost
    assert "failure class lost" in lost
    other = stored(cluster, result, names(result, "distributed-0").supplemental)
    assert "stopped to be started again with every node" in other
    _ended_as_if_uninterrupted(cluster, plan, task, tasks[task])


# Deferred launch tasks only: the eviction test covers both ways a restart reaches a node.
@pytest.mark.parametrize("mode", ["deferrable"])
def test_a_lost_node_restarts_the_run_from_the_checkpoints_synced_before(
    cluster: Cluster,
    tasks: dict[str, int],
    env: dict[str, str],
    mode: str,
) -> None:
    """The machine under both nodes dies: every container killed at once (no grace, no last
    sync), no word from its kubelet any more. The controller-manager finds the node NotReady
    and evicts its pods, which stay "Terminating" (no kubelet confirms it); the launch tasks
    take them for left behind, delete them at once, and both nodes start again on the node
    that replaced it, from what their sidecars had synced; the run ends as an uninterrupted one
    would."""
    assert cluster.plane is not None
    task = _task("node-lost", mode)
    plan = _prepare(cluster, task, env)
    workers = {node: launch_in_background(cluster, plan, node, 1, env) for node in NODES}
    for node in NODES:
        checkpointed_pod(cluster, plan, node, 30, workers)
    lost = cluster.agents[-1]
    lost.lose()
    replacement = NodeAgent(cluster.plane, f"{lost.node_name}-replacement",
                            root=cluster.root / "replacement")  # fmt: skip
    cluster.agents.append(replacement)
    replacement.start()
    result = succeeded(cluster, workers, plan, tasks[task], env)
    for node in NODES:
        train = stored(cluster, result, names(result, node).train)
        started_at = steps_started_at(train)
        assert started_at[0] == 0 and started_at[-1] > 30, train  # from a synced checkpoint
        assert "step 80" in train
    ends = [stored(cluster, result, names(result, node).supplemental) for node in NODES]
    assert all("restart 1 of at most 2" in end for end in ends), ends
    # The node whose launch task saw its pod gone first asked for the restart; the other's
    # either saw its own pod gone too before that request (both pods died with their node), or
    # took its pod down for it and started it again with the first: a race, either is right.
    assert any("its pod was lost (deleted before its end could be read" in end
               and "failure class lost" in end for end in ends), ends  # fmt: skip
    lost, for_restart = "its pod was lost (deleted before", "stopped to be started again with"
    assert all(lost in end or for_restart in end for end in ends), ends
    _ended_as_if_uninterrupted(cluster, plan, task, tasks[task])


def _evict(cluster: Cluster, pod: str) -> None:
    """An eviction through the Eviction API, as ``kubectl drain`` asks for one."""
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": pod, "namespace": NAMESPACE}}  # fmt: skip
    cluster.api.create_namespaced_pod_eviction(pod, NAMESPACE, eviction)


# Deferred launch tasks only: the eviction test and the lost node's cover both ways a restart
# reaches a node.
@pytest.mark.parametrize("mode", ["deferrable"])
def test_a_training_that_fails_on_its_own_is_not_started_again(
    cluster: Cluster,
    tasks: dict[str, int],
    env: dict[str, str],
    mode: str,
) -> None:
    task = _task("concurrent-failure", mode)
    plan = _prepare(cluster, task, env)  # rank 0 exits 3 after 2 s
    outputs = _ended({node: launch_in_background(cluster, plan, node, 1, env) for node in NODES})
    collected = cluster.runner("collect", str(plan), env=env)
    assert results_of(collected) == [{"failed_nodes": list(NODES)}], (outputs, collected.stderr)
    result = {"task_id": tasks[task], "run": {"run_key": objects_of(plan).run_key}}
    failed = stored(cluster, result, names(result, "distributed-0").supplemental)
    assert failed.startswith("node distributed-0 failed with exit code 3")
    assert "failure class training: the training failed on its own (not retried)" in failed
    stopped = stored(cluster, result, names(result, "distributed-1").supplemental)
    assert "failure class stopped: stopped (not retried)" in stopped
    assert len(cluster.created_for(tasks[task])) == 2  # no pod started again
    assert not cluster.store.list(f"{objects_of(plan).prefix}/restarts/")


# Deferred launch tasks only: the eviction test covers both ways a restart reaches a node.
@pytest.mark.parametrize("mode", ["deferrable"])
def test_the_task_s_restart_limit_is_honoured(
    cluster: Cluster,
    tasks: dict[str, int],
    env: dict[str, str],
    mode: str,
) -> None:
    task = _task("restart-limit", mode)
    plan = _prepare(cluster, task, env)  # max_node_restarts: 1
    workers = {node: launch_in_background(cluster, plan, node, 1, env) for node in NODES}
    first = checkpointed_pod(cluster, plan, "distributed-1", 5, workers)
    _evict(cluster, first)
    second = checkpointed_pod(cluster, plan, "distributed-1", 25, workers)
    cluster.agents[-1].evict(NAMESPACE, second)
    outputs = _ended(workers)
    assert all(worker.returncode != 0 for worker in workers.values()), outputs
    collected = cluster.runner("collect", str(plan), env=env)
    assert results_of(collected) == [{"failed_nodes": list(NODES)}], collected.stderr[-4000:]
    result = {"task_id": tasks[task], "run": {"run_key": objects_of(plan).run_key}}
    lost = stored(cluster, result, names(result, "distributed-1").supplemental)
    assert lost.startswith("node distributed-1 was evicted by Kubernetes"), lost
    # The first loss, restarted: an evicted pod is deleted (its DisruptionTarget with it).
    assert "start 1: its pod was lost (deleted before its end could be read" in lost
    assert "not restarted: the run's 1 restarts were all used" in lost
    assert "stopped because node distributed-1" in stored(
        cluster, result, names(result, "distributed-0").supplemental
    )


# Deferred launch tasks, the default: their triggers follow the pods through the restart. A
# synchronous one follows its pod with the provider's own retried reads, which this does not
# try against a restart (a run of it costs 40 s of CI's 30 minutes).
@pytest.mark.parametrize("mode", ["deferrable"])
def test_an_apiserver_restarted_mid_run_costs_nothing(
    cluster: Cluster,
    tasks: dict[str, int],
    env: dict[str, str],
    mode: str,
) -> None:
    """The kube-apiserver stopped and started again while both nodes train (an upgrade of the
    control plane, a crash): the launch tasks (or their triggers) and the node agent wait for
    it, the training goes on meanwhile, and the run ends as if nothing had happened: each pod
    made once, never started again, every step trained once."""
    assert cluster.plane is not None
    # An earlier restart may have left the live node (the last: a lost one stays in the list)
    # tainted until its next heartbeat.
    live = [cluster.agents[-1].node_name]
    wait_untainted(cluster.plane, live)
    task = _task("apiserver-restart", mode)
    plan = _prepare(cluster, task, env)
    workers = {node: launch_in_background(cluster, plan, node, 1, env) for node in NODES}
    checkpointed_pod(cluster, plan, "distributed-1", 10, workers)
    cluster.plane.restart_apiserver()
    result = succeeded(cluster, workers, plan, tasks[task], env)
    wait_untainted(cluster.plane, live)  # the next test's pods find the nodes schedulable
    for node in NODES:
        train = stored(cluster, result, names(result, node).train)
        assert steps_started_at(train) == [0], train  # never started again
        steps = [line for line in train.splitlines() if line.startswith("step ")]
        assert len(steps) == 80, train
    model = cluster.root / "fetched" / f"{task}-model.txt"
    cluster.store.get_file(f"{objects_of(plan).output('distributed-0')}/model.txt", model)
    assert model.read_text() == "weights after 80 steps"
    assert len(cluster.created_for(tasks[task])) == 2
    assert cluster.pods_of(tasks[task]) == []
