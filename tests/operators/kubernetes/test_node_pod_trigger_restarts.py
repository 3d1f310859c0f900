"""The node trigger and the run's restarts (``octotrain.restarts``), against the tests' real
control plane: when another node asks for the restart this node's pod would take part in, the
trigger deletes the pod with its grace period (no stop recorded: the node is started again,
not stopped) and fires a ``restart`` event with the request; a restart of another number, or a
trigger told that none can come, leaves the pod to end by itself."""

from __future__ import annotations

import importlib
import json
from datetime import UTC, datetime

from airflow.providers.cncf.kubernetes.triggers.pod import KubernetesPodTrigger
from kubernetes import client

from hooks.runs.run_abort import RunAbortMarker
from hooks.runs.run_restarts import RunRestarts
from hooks.storage.object_store import default_object_store
from octotrain.restarts import RunRestart
from operators.kubernetes.node_pod_trigger import RESTART, RESTART_KEY, NodePodTrigger
from tests.operators.conftest import start_pod
from tests.operators.kubernetes.test_node_pod_trigger import (
    CONN_ID,
    NAMESPACE,
    NODE,
    RUN_PREFIX,
    first_event,
    pod_is_going,
)
from tests.stored_run_files import run_files_of

LOST = RunRestart(1, "distributed-0", "TerminationByKubelet: The node was low on memory.")


def watching(pod_name: str, next_restart: int | None) -> NodePodTrigger:
    """The trigger of a pod of restart ``next_restart - 1``, rebuilt through JSON."""
    inner = KubernetesPodTrigger(
        pod_name=pod_name, pod_namespace=NAMESPACE, trigger_start_time=datetime.now(UTC),
        base_container_name="base", kubernetes_conn_id=CONN_ID, poll_interval=0.2,
        startup_check_interval=1, startup_timeout=30, on_finish_action="delete_succeeded_pod",
        termination_grace_period=2,
    )  # fmt: skip
    trigger = NodePodTrigger.around(
        inner, run_prefix=RUN_PREFIX, node_index=NODE, abort_check_seconds=0.2, grace_seconds=2,
        next_restart=next_restart,
    )  # fmt: skip
    classpath, kwargs = trigger.serialize()
    module, _, name = classpath.rpartition(".")
    rebuilt = getattr(importlib.import_module(module), name)(**json.loads(json.dumps(kwargs)))
    assert isinstance(rebuilt, NodePodTrigger)
    return rebuilt


def test_another_node_s_loss_takes_the_pod_down_for_the_run_s_restart(
    pod_cluster: client.CoreV1Api,
) -> None:
    start_pod(pod_cluster, "trains", "import time; print('training'); time.sleep(120)")
    RunRestarts(run_files_of(default_object_store(), RUN_PREFIX)).request(LOST)
    event = first_event(watching("trains", next_restart=1))
    assert event["status"] == RESTART
    assert RunRestart.from_json(event[RESTART_KEY]) == LOST
    assert pod_is_going(pod_cluster, "trains")
    assert (
        RunAbortMarker(run_files_of(default_object_store(), RUN_PREFIX)).stopped_because(NODE)
        is None
    )


def test_a_restart_this_pod_is_not_waiting_for_leaves_it_to_its_end(
    pod_cluster: client.CoreV1Api,
) -> None:
    start_pod(pod_cluster, "ends", "import time; print('training'); time.sleep(1)")
    RunRestarts(run_files_of(default_object_store(), RUN_PREFIX)).request(LOST)  # restart 1
    assert first_event(watching("ends", next_restart=2))["status"] == "success"
    start_pod(pod_cluster, "limit", "import time; print('training'); time.sleep(1)")
    assert first_event(watching("limit", next_restart=None))["status"] == "success"
