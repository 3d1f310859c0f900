"""Kueue's Workload of a run, read as the pages and the launch read it
(``hooks.kubernetes.kueue_workloads``), from conditions in the words of Kueue 0.17's flavor assigner
(the real ones: tests/e2e/test_kubernetes_admission.py)."""

from __future__ import annotations

from typing import Any

from hooks.kubernetes.kueue_workloads import never_admitted, queue_state_of


def _workload(name: str, message: str, *, priority: int = 0, created: str = "") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "creationTimestamp": created or "2026-12-06T09:00:00Z"},
        "spec": {"queueName": "vision", "priority": priority},
        "status": {
            "conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                            "message": message}],
            "resourceRequests": [{"name": "main", "resources": {"cpu": "4400m",
                                                                "memory": "2Gi"}}],
        },
    }  # fmt: skip


LACKING = "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
BEYOND = (
    "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor cpu-nodes, "
    "previously considered podsets requests (0) + current podset request (4400m) > maximum "
    "capacity (3)"
)


def test_a_waiting_workload_s_place_and_reason_in_words() -> None:
    mine = _workload("run-b", LACKING + "cpu-nodes, 2200m more needed",
                     created="2026-12-06T09:05:00Z")  # fmt: skip
    ahead = _workload("run-a", LACKING + "cpu-nodes, 1 more needed", priority=5,
                      created="2026-12-06T09:06:00Z")  # fmt: skip
    state = queue_state_of(mine, [mine, ahead], cluster_queue="team-vision")
    assert (state.queue, state.position, state.asked) == (
        "vision (ClusterQueue team-vision)", 2, "4.4 cpu, 2 GiB of memory"
    )  # fmt: skip
    assert state.reason == (
        "waiting for quota: ClusterQueue team-vision lacks 2200m more cpu in flavor cpu-nodes, "
        "the run needs 4.4 cpu"
    )
    assert never_admitted(mine) is None


def test_a_workload_larger_than_its_cluster_queue_is_never_admitted() -> None:
    assert never_admitted(_workload("run-c", BEYOND), cluster_queue="team-vision") == (
        "never admitted: ClusterQueue team-vision has at most 3 cpu in flavor cpu-nodes, the run "
        "needs 4.4 cpu"
    )
