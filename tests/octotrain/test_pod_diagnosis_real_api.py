"""The supplemental log of a pod that the real kube-scheduler cannot place: it quotes the
scheduler's own reason (``0/2 nodes are available: 2 Insufficient cpu``), from the pod's
``PodScheduled`` condition as a real control plane writes it (``tests/k8s_control_plane.py``)."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy.orm import Session

from octotrain.pod_diagnosis import NodeEnd, diagnose
from tests.k8s_control_plane import ControlPlane, delete_node, register_node
from tests.operators.kubernetes.test_launch_pod import CPU_TASK, plan_of, pods

NAMESPACE = "octotrain-placement"
SCHEDULED_SECONDS = 60.0


def _unschedulable(k8s_api: ControlPlane, name: str) -> dict[str, Any]:
    """The pod once the scheduler has said it cannot place it."""
    deadline = time.monotonic() + SCHEDULED_SECONDS
    with k8s_api.client() as api:
        while True:
            pod = api.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}").json()
            conditions = (pod.get("status") or {}).get("conditions") or []
            if any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conditions):
                return pod
            assert time.monotonic() < deadline, f"the scheduler never judged pod {name}"
            time.sleep(0.1)


def test_a_pod_no_node_can_take_quotes_the_real_schedulers_reason(
    rule_session: Session, k8s_api: ControlPlane
) -> None:
    nodes = [f"small-{number}" for number in range(2)]
    for node in nodes:
        register_node(k8s_api, node, cpu="100m", memory="64Mi")
    try:
        waiting = _placed_nowhere(k8s_api, rule_session)
    finally:  # the nodes of other tests' pods have agents that run them; these have none
        for node in nodes:
            delete_node(k8s_api, node)
    log = diagnose(waiting, [], NodeEnd(node_index="single-0", memory_limit_mib=512,
                                        startup_timeout_seconds=120))  # fmt: skip
    assert log is not None
    expected = ("node single-0 did not start within 120s: the pod could not be scheduled "
                "(Unschedulable): 0/2 nodes are available: ")  # fmt: skip
    assert log.reason.startswith(expected)
    assert "2 Insufficient cpu" in log.reason and "2 Insufficient memory" in log.reason


def _placed_nowhere(k8s_api: ControlPlane, rule_session: Session) -> dict[str, Any]:
    """A one-node training pod once the scheduler has judged it; the pod is deleted."""
    with k8s_api.client() as api:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        assert api.post("/api/v1/namespaces", json=namespace).status_code in (201, 409)
        account = f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default"
        deadline = time.monotonic() + SCHEDULED_SECONDS
        while api.get(account).status_code != 200:
            assert time.monotonic() < deadline, "no default service account"
            time.sleep(0.1)
        [pod] = pods(plan_of(rule_session, CPU_TASK, 1))
        pod["metadata"]["namespace"] = NAMESPACE
        pod["spec"].pop("priorityClassName", None)  # no PriorityClass in this namespace's test
        created = api.post(f"/api/v1/namespaces/{NAMESPACE}/pods", json=pod)
        assert created.status_code == 201, created.text
        name = created.json()["metadata"]["name"]
    try:
        return _unschedulable(k8s_api, name)
    finally:
        with k8s_api.client() as api:
            api.delete(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}?gracePeriodSeconds=0")
