"""The tests' real control plane (``tests/k8s_control_plane.py``) as an Airflow connection,
with a node of the node agent to run the pods and a local object store as the settings'
store: what a launch task and its trigger find in a worker's or the triggerer's environment.

The pods go to a namespace of their own, enforcing Pod Security ``restricted`` as a training
namespace should; each test's pods are deleted after it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from octotrain.settings import get_settings
from tests.k8s_control_plane import ControlPlane, create
from tests.k8s_node_agent.agent import NodeAgent

POD_NAMESPACE = "octotrain-operators"
POD_CONN_ID = "octotrain_test_cluster"
# Far longer than a pod of the node agent takes to start, even on a busy machine.
START_DEADLINE_SECONDS = 60
# What the restricted Pod Security profile asks of a pod and of each of its containers.
RESTRICTED_POD_CONTEXT = {"runAsNonRoot": True, "runAsUser": 1000,
                          "seccompProfile": {"type": "RuntimeDefault"}}  # fmt: skip
RESTRICTED_CONTAINER_CONTEXT = {"allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]}}  # fmt: skip


@pytest.fixture(scope="module")
def node_agent(
    k8s_api: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[NodeAgent]:
    """The pods' namespace (with its default service account, which admission looks up) and a
    node that runs them, for the module's tests."""
    labels = {"pod-security.kubernetes.io/enforce": "restricted"}
    create(k8s_api, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": POD_NAMESPACE,
                                                        "labels": labels}})  # fmt: skip
    with k8s_api.client() as api:
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        account = f"/api/v1/namespaces/{POD_NAMESPACE}/serviceaccounts/default"
        while api.get(account).status_code != 200:
            assert time.monotonic() < deadline, f"no default service account in {POD_NAMESPACE}"
            time.sleep(0.1)
    root = tmp_path_factory.mktemp("operators-node")
    with NodeAgent(k8s_api, f"operators-{root.name}", root=root) as agent:
        yield agent


@pytest.fixture
def pod_cluster(
    k8s_api: ControlPlane,
    node_agent: NodeAgent,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[client.CoreV1Api]:
    """The control plane as the connection ``POD_CONN_ID`` (as its admin); yields a client of
    it. The test's pods are deleted at its end, and waited for."""
    connection = {"conn_type": "kubernetes",
                  "extra": {"kube_config_path": str(k8s_api.kubeconfig)}}  # fmt: skip
    monkeypatch.setenv(f"AIRFLOW_CONN_{POD_CONN_ID.upper()}", json.dumps(connection))
    monkeypatch.setenv("OCTOTRAIN_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("OCTOTRAIN_OBJECT_STORE_URL", f"file://{tmp_path / 'objects'}")
    get_settings.cache_clear()
    api_client = config.new_client_from_config(config_file=str(k8s_api.kubeconfig))
    core = client.CoreV1Api(api_client)
    try:
        yield core
    finally:
        core.delete_collection_namespaced_pod(POD_NAMESPACE, grace_period_seconds=0)
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while core.list_namespaced_pod(POD_NAMESPACE).items:
            assert time.monotonic() < deadline, "the test's pods were never gone"
            time.sleep(0.1)
        api_client.close()
        get_settings.cache_clear()


def start_pod(core: client.CoreV1Api, name: str, code: str) -> None:
    """A one-container pod whose ``base`` container runs ``python -c code``."""
    container = {"name": "base", "image": "python:3.11", "command": ["python", "-c", code],
                 "securityContext": RESTRICTED_CONTAINER_CONTEXT}  # fmt: skip
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"restartPolicy": "Never", "securityContext": RESTRICTED_POD_CONTEXT,
                     "automountServiceAccountToken": False,
                     "containers": [container]}}  # fmt: skip
    core.create_namespaced_pod(POD_NAMESPACE, body)


def wait_until_running(core: client.CoreV1Api, name: str) -> None:
    """Poll, with a deadline, until the pod's container runs."""
    deadline = time.monotonic() + START_DEADLINE_SECONDS
    while core.read_namespaced_pod(name, POD_NAMESPACE).status.phase != "Running":
        assert time.monotonic() < deadline, f"pod {name} never ran"
        time.sleep(0.05)
