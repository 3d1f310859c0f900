"""The node agent against the real control plane: a pod the real scheduler binds to its node
runs as a process, its status and events reach the API, its log is read through the
apiserver's ``pods/log`` (proxied to the agent over TLS), and a deleted pod's process gets
SIGTERM within its grace period before the pod is gone."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.k8s_control_plane import ControlPlane
from tests.k8s_node_agent.agent import NodeAgent

NAMESPACE = "agent-test"
WAIT_SECONDS = 60.0


@pytest.fixture(scope="module")
def agent(k8s_api: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeAgent]:
    with NodeAgent(k8s_api, "agent-node", root=tmp_path_factory.mktemp("agent"), gpus=2) as node:
        with k8s_api.client() as api:
            namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
            assert api.post("/api/v1/namespaces", json=namespace).status_code in (201, 409)
        yield node


def _pod(name: str, script: str, **extra: Any) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", script]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [container | extra], "restartPolicy": "Never",
                     "automountServiceAccountToken": False,
                     "terminationGracePeriodSeconds": 5}}  # fmt: skip


def _until(api: httpx.Client, name: str, done: Any) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        answer = api.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")
        pod = answer.json() if answer.status_code == 200 else None
        if done(pod):
            return pod  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, pod
        time.sleep(0.1)


def test_a_pod_runs_as_a_process_and_its_log_comes_through_the_apiserver(
    agent: NodeAgent, k8s_api: ControlPlane
) -> None:
    pods = f"/api/v1/namespaces/{NAMESPACE}/pods"
    script = 'echo "gpus=$CUDA_VISIBLE_DEVICES"; echo second; echo third; exit 3'
    resources = {"resources": {"limits": {"nvidia.com/gpu": "1"}}}
    with k8s_api.client() as api:
        assert api.post(pods, json=_pod("once", script, **resources)).status_code == 201
        pod = _until(api, "once", lambda p: p["status"].get("phase") == "Failed")
        assert pod["spec"]["nodeName"] == "agent-node"
        [status] = pod["status"]["containerStatuses"]
        assert status["state"]["terminated"]["exitCode"] == 3
        assert {c["type"] for c in pod["status"]["conditions"]} >= {"PodScheduled", "Ready"}
        log = api.get(f"{pods}/once/log")
        assert log.status_code == 200, log.text
        assert log.text == "gpus=0\nsecond\nthird\n"
        assert api.get(f"{pods}/once/log?tailLines=1").text == "third\n"
        stamped = api.get(f"{pods}/once/log?timestamps=true&tailLines=1").text
        assert stamped.endswith("Z third\n") and stamped.startswith("20")
        events = api.get(f"/api/v1/namespaces/{NAMESPACE}/events").json()["items"]
        reasons = {e["reason"] for e in events if e["involvedObject"]["name"] == "once"}
        assert {"Scheduled", "Started"} <= reasons


def test_a_deleted_pod_is_stopped_within_its_grace_period_then_gone(
    agent: NodeAgent, k8s_api: ControlPlane
) -> None:
    pods = f"/api/v1/namespaces/{NAMESPACE}/pods"
    script = "trap 'echo stopping; exit 0' TERM; echo up; while true; do sleep 0.1; done"
    with k8s_api.client() as api:
        assert api.post(pods, json=_pod("stopped", script)).status_code == 201
        _until(api, "stopped", lambda p: p["status"].get("phase") == "Running")
        with api.stream("GET", f"{pods}/stopped/log?follow=true") as followed:
            lines = followed.iter_lines()
            assert next(lines) == "up"
            started = time.monotonic()
            assert api.delete(f"{pods}/stopped").status_code == 200
            # (sh may first say "Terminated" of the sleep it was waiting for)
            assert "stopping" in list(lines)
        _until(api, "stopped", lambda p: p is None)
        assert time.monotonic() - started < 5
