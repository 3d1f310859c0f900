"""What a run asks of Kueue and whether its ClusterQueue could ever give it
(``hooks.kubernetes.kueue_quota``); against the real Kueue:
tests/e2e/test_kubernetes_admission.py."""

from __future__ import annotations

from typing import Any

import pytest

from hooks.kubernetes.kueue_quota import beyond_cluster_queue, pod_requests, run_requests


def _container(cpu: str = "", memory: str = "", *, limit_cpu: str = "", **extra: Any) -> dict:
    requests = {name: value for name, value in (("cpu", cpu), ("memory", memory)) if value}
    resources: dict[str, Any] = {"requests": requests}
    if limit_cpu:
        resources["limits"] = {"cpu": limit_cpu}
    return {"name": "c", "resources": resources, **extra}


def _cluster_queue(*flavors: dict[str, Any], cohort: str = "", covered: tuple = ("cpu", "memory")):
    spec: dict[str, Any] = {"resourceGroups": [{"coveredResources": list(covered),
                                                "flavors": list(flavors)}]}  # fmt: skip
    if cohort:
        spec["cohortName"] = cohort
    return {"metadata": {"name": "team-vision"}, "spec": spec}


def _flavor(name: str, cpu: str, *, borrowing: str = "") -> dict[str, Any]:
    quota: dict[str, Any] = {"name": "cpu", "nominalQuota": cpu}
    if borrowing:
        quota["borrowingLimit"] = borrowing
    return {"name": name, "resources": [quota, {"name": "memory", "nominalQuota": "64Gi"}]}


def test_a_pod_asks_its_containers_and_sidecars_or_its_largest_init_container() -> None:
    pod = {"spec": {
        "initContainers": [_container("100m", "64Mi", restartPolicy="Always"),  # sidecar
                           _container("3")],  # plain init: 3 cpu beside the sidecar's 0.1
        "containers": [_container("1", "1Gi"), _container(limit_cpu="500m")],
        "overhead": {"cpu": "50m"},
    }}  # fmt: skip
    asked = pod_requests(pod)
    assert asked["cpu"] == pytest.approx(3.1 + 0.05)
    assert asked["memory"] == 2**30 + 64 * 2**20
    assert run_requests([pod, pod])["cpu"] == pytest.approx(6.3)


def test_a_run_that_fits_one_flavor_is_let_through() -> None:
    queue = _cluster_queue(_flavor("small", "2"), _flavor("large", "8"))
    assert beyond_cluster_queue({"cpu": 4.4, "memory": 2**31}, queue) is None


def test_a_run_larger_than_every_flavor_is_refused_with_the_numbers() -> None:
    queue = _cluster_queue(_flavor("small", "2"), _flavor("large", "3"))
    assert beyond_cluster_queue({"cpu": 4.4, "memory": 2**31}, queue) == (
        "ClusterQueue team-vision can give at most 2 cpu in flavor small (the run needs 4.4 cpu) "
        "or 3 cpu in flavor large (the run needs 4.4 cpu): Kueue would never admit the run"
    )


def test_in_a_cohort_only_a_borrowing_limit_bounds_the_queue() -> None:
    bounded = _cluster_queue(_flavor("cpu-nodes", "2", borrowing="1"), cohort="research")
    refused = beyond_cluster_queue({"cpu": 4.0}, bounded)
    assert refused is not None and "at most 3 cpu in flavor cpu-nodes" in refused
    assert beyond_cluster_queue({"cpu": 3.0}, bounded) is None
    unbounded = _cluster_queue(_flavor("cpu-nodes", "2"), cohort="research")
    assert beyond_cluster_queue({"cpu": 400.0}, unbounded) is None  # only Kueue knows


def test_a_resource_no_group_covers_is_never_given() -> None:
    queue = _cluster_queue(_flavor("cpu-nodes", "8"))
    assert beyond_cluster_queue({"cpu": 1.0, "nvidia.com/gpu": 2.0}, queue) == (
        "ClusterQueue team-vision has no quota for nvidia.com/gpu (none of its resource groups "
        "covers it), the run needs 2 GPUs"
    )
