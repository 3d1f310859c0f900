"""Whether a run could ever be admitted by its ClusterQueue, decided before anything of it is
made: a run asking more than its queue can ever give would otherwise wait until Kueue's first
look at its Workload, once its pods exist.

- What the run asks is Kueue's sum over its pods of each pod's effective requests (Kubernetes'
  rule: the app containers and the sidecars together, or the largest plain init container
  with the sidecars started before it, whichever is more; a limit stands for a request left
  out; plus the pod's overhead).
- What a ClusterQueue can ever give, per flavor and resource, is its nominal quota, plus its
  borrowing limit when it is in a cohort. A resource without a borrowing limit in a cohort may
  be borrowed as far as the cohort lends, which only Kueue knows: no verdict here on it, and
  Kueue's own (``hooks.kubernetes.kueue_workloads.never_admitted``) fails the run at its launch.
- A resource group's covered resources get one flavor together: the run fits if one flavor of
  each group it asks of holds all of them. A resource no group covers is never given.
"""

from __future__ import annotations

import math
from typing import Any

from kubernetes.utils import parse_quantity

from hooks.kubernetes.kueue_workloads import format_amount

Requests = dict[str, float]


def pod_requests(pod: dict[str, Any]) -> Requests:
    """A pod's effective requests, as the scheduler and Kueue count them."""
    spec = pod.get("spec", {})
    sidecars: Requests = {}
    largest_init: Requests = {}
    for container in spec.get("initContainers") or []:
        asked = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            sidecars = _sum(sidecars, asked)
        else:
            largest_init = _max(largest_init, _sum(sidecars, asked))
    running = sidecars
    for container in spec.get("containers") or []:
        running = _sum(running, _container_requests(container))
    overhead = {name: float(parse_quantity(amount))
                for name, amount in (spec.get("overhead") or {}).items()}  # fmt: skip
    return _sum(_max(running, largest_init), overhead)


def run_requests(pods: list[dict[str, Any]]) -> Requests:
    """What a run's pods ask of Kueue together (its pod group's Workload)."""
    total: Requests = {}
    for pod in pods:
        total = _sum(total, pod_requests(pod))
    return total


def beyond_cluster_queue(asked: Requests, cluster_queue: dict[str, Any]) -> str | None:
    """Why ``cluster_queue`` can never admit a run asking ``asked``, with the numbers; None if
    it may, or if only Kueue can tell."""
    name = cluster_queue.get("metadata", {}).get("name", "")
    spec = cluster_queue.get("spec", {})
    in_cohort = bool(spec.get("cohortName"))
    groups = spec.get("resourceGroups") or []
    covered = {resource for group in groups for resource in group.get("coveredResources") or []}
    for resource, amount in sorted(asked.items()):
        if amount > 0 and resource not in covered:
            return (
                f"ClusterQueue {name} has no quota for {resource} (none of its resource groups "
                f"covers it), the run needs {format_amount(amount, resource)}"
            )
    for group in groups:
        wanted = [r for r in group.get("coveredResources") or [] if asked.get(r, 0) > 0]
        if not wanted:
            continue
        shortfalls = []
        for flavor in group.get("flavors") or []:
            ceilings = _ceilings(flavor, in_cohort=in_cohort)
            short = [r for r in wanted if asked[r] > ceilings.get(r, 0.0)]
            if not short:
                break
            resource = short[0]
            most, needs = ceilings.get(resource, 0.0), asked[resource]
            shortfalls.append(
                f"{format_amount(most, resource)} in flavor {flavor.get('name', '')} "
                f"(the run needs {format_amount(needs, resource)})"
            )
        else:
            return (
                f"ClusterQueue {name} can give at most {' or '.join(shortfalls)}: Kueue would "
                "never admit the run"
            )
    return None


def _ceilings(flavor: dict[str, Any], *, in_cohort: bool) -> Requests:
    """The most a flavor of the ClusterQueue can ever give per resource (infinite where only
    Kueue can tell: borrowing in a cohort without a limit)."""
    ceilings: Requests = {}
    for quota in flavor.get("resources") or []:
        most = float(parse_quantity(quota.get("nominalQuota", 0)))
        if in_cohort:
            borrowing = quota.get("borrowingLimit")
            most = math.inf if borrowing is None else most + float(parse_quantity(borrowing))
        ceilings[quota["name"]] = most
    return ceilings


def _container_requests(container: dict[str, Any]) -> Requests:
    resources = container.get("resources") or {}
    amounts = dict(resources.get("limits") or {}) | dict(resources.get("requests") or {})
    return {name: float(parse_quantity(amount)) for name, amount in amounts.items()}


def _sum(left: Requests, right: Requests) -> Requests:
    return {name: left.get(name, 0.0) + right.get(name, 0.0) for name in left.keys() | right}


def _max(left: Requests, right: Requests) -> Requests:
    return {name: max(left.get(name, 0.0), right.get(name, 0.0)) for name in left.keys() | right}
