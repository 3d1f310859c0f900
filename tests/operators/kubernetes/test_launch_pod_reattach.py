"""A node's launch task finds the pod an earlier try of it created
(``operators.kubernetes.launch_pod``), by the name that try kept in the task instance's state store
(``airflow.sdk``'s ``task_state_store``, which outlives a try), whatever the pod's phase; it never
takes a pod that is gone or that a try already finished with (the provider's ``already_checked``
label), and it keeps the pod it goes on with for the next try. Against the tests' real control
plane."""

from __future__ import annotations

from typing import Any

from kubernetes import client
from kubernetes.client import models as k8s

from operators.kubernetes.launch_pod import POD_STATE_KEY, LaunchNodePodOperator
from tests.operators.conftest import (
    POD_CONN_ID,
    POD_NAMESPACE,
    start_pod,
    wait_until_running,
)

POD = "train-1-single-0"


class StateStore:
    """A task instance's state store as ``airflow.sdk`` gives it: JSON values by key."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: Any) -> None:
        self.values[key] = value


def node() -> LaunchNodePodOperator:
    return LaunchNodePodOperator(
        task_id="launch", training_task_id=1, node_index="single-0",
        kubernetes_conn_id=POD_CONN_ID, namespace=POD_NAMESPACE,
    )  # fmt: skip


def a_new_pod(name: str) -> k8s.V1Pod:
    return k8s.V1Pod(metadata=k8s.V1ObjectMeta(name=name, namespace=POD_NAMESPACE))


def test_the_next_try_goes_on_with_the_pod_its_state_store_names(
    pod_cluster: client.CoreV1Api,
) -> None:
    start_pod(pod_cluster, POD, "import time; time.sleep(120)")
    wait_until_running(pod_cluster, POD)
    store = StateStore({POD_STATE_KEY: {"name": POD, "namespace": POD_NAMESPACE}})
    found = node().get_or_create_pod(a_new_pod("train-1-single-0-x"), {"task_state_store": store})
    assert (found.metadata.name, found.status.phase) == (POD, "Running")
    assert store.values == {POD_STATE_KEY: {"name": POD, "namespace": POD_NAMESPACE}}
    assert [pod.metadata.name for pod in pod_cluster.list_namespaced_pod(
        POD_NAMESPACE).items] == [POD]  # fmt: skip


def test_a_pod_gone_or_finished_with_is_not_taken_again(
    pod_cluster: client.CoreV1Api,
) -> None:
    start_pod(pod_cluster, POD, "import time; time.sleep(120)")
    wait_until_running(pod_cluster, POD)
    patch = {"metadata": {"labels": {LaunchNodePodOperator.POD_CHECKED_KEY: "True"}}}
    pod_cluster.patch_namespaced_pod(POD, POD_NAMESPACE, patch)
    for name in (POD, "train-1-single-0-gone"):
        store = StateStore({POD_STATE_KEY: {"name": name, "namespace": POD_NAMESPACE}})
        assert node()._remembered_pod({"task_state_store": store}) is None  # type: ignore[arg-type]
    assert node()._remembered_pod({}) is None  # type: ignore[arg-type]  # no store: a test run
