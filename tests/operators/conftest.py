"""The Kubernetes API emulator as an Airflow connection, with a local object store as the
settings' store: what a launch task and its trigger find in a worker's or the triggerer's
environment."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from octotrain.settings import get_settings
from tests.k8s_emulator import KubernetesEmulator
from tests.k8s_emulator.fixtures import k8s_emulator  # noqa: F401
from tests.k8s_emulator.pod_security import RESTRICTED_CONTAINER_CONTEXT, RESTRICTED_POD_CONTEXT

EMULATOR_NAMESPACE = "octotrain"
EMULATOR_CONN_ID = "octotrain_test_emulator"
# Far longer than a pod of the emulator takes to start, even on a busy machine.
START_DEADLINE_SECONDS = 60


@pytest.fixture
def emulated_cluster(
    k8s_emulator: KubernetesEmulator,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[client.CoreV1Api]:
    """The emulator as the connection ``EMULATOR_CONN_ID``; yields a client of it."""
    kubeconfig = k8s_emulator.write_kubeconfig(
        tmp_path / "kubeconfig", namespace=EMULATOR_NAMESPACE
    )
    connection = {"conn_type": "kubernetes", "extra": {"kube_config_path": str(kubeconfig)}}
    monkeypatch.setenv(f"AIRFLOW_CONN_{EMULATOR_CONN_ID.upper()}", json.dumps(connection))
    monkeypatch.setenv("OCTOTRAIN_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("OCTOTRAIN_OBJECT_STORE_URL", f"file://{tmp_path / 'objects'}")
    get_settings.cache_clear()
    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    try:
        yield client.CoreV1Api(api_client)
    finally:
        api_client.close()
        get_settings.cache_clear()


def start_pod(core: client.CoreV1Api, name: str, code: str) -> None:
    """A one-container pod whose ``base`` container runs ``python -c code``."""
    container = {"name": "base", "image": "python:3.11", "command": ["python", "-c", code],
                 "securityContext": RESTRICTED_CONTAINER_CONTEXT}  # fmt: skip
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"restartPolicy": "Never", "securityContext": RESTRICTED_POD_CONTEXT,
                     "containers": [container]}}  # fmt: skip
    core.create_namespaced_pod(EMULATOR_NAMESPACE, body)


def wait_until_running(core: client.CoreV1Api, name: str) -> None:
    """Poll, with a deadline, until the pod's container runs."""
    deadline = time.monotonic() + START_DEADLINE_SECONDS
    while core.read_namespaced_pod(name, EMULATOR_NAMESPACE).status.phase != "Running":
        assert time.monotonic() < deadline, f"pod {name} never ran"
        time.sleep(0.05)
