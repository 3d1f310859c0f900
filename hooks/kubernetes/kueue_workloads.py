"""The door to Kueue's view of a run on the cluster: its Workload (one per run, the pod group of
its nodes, named as the group), read to say where the run stands in its queue.

- queue: the run's LocalQueue, and the ClusterQueue it points at;
- asked: the Workload's ``resourceRequests`` (every pod of the group, Kueue's own sum);
- position: among the Workloads of the same LocalQueue that wait (no quota reserved), in
  Kueue's order for them (higher priority first, then older): Kueue orders by its
  ClusterQueue, of which this namespace sees only its own share, so this is the position in
  the LocalQueue;
- reason: Kueue's ``QuotaReserved`` condition, in words ("waiting for quota: ClusterQueue
  team-a lacks 1 more cpu in flavor default, the run needs 3 cpu"); an eviction (preemption)
  says so; a run larger than its ClusterQueue can ever give is ``never_admitted`` (its launch
  fails it then, instead of letting it wait forever);
- admitted: the ``Admitted`` condition's time.

A run whose pods were not created yet has no Workload: it is in no queue yet (None).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from kubernetes.client import CustomObjectsApi
from kubernetes.client.rest import ApiException
from kubernetes.utils import parse_quantity

from hooks.kubernetes.kubernetes_runs import HTTP_NOT_FOUND, KubernetesRuns
from octotrain.admission import QueueState
from octotrain.catalog.models import Run
from octotrain.kubernetes_config import kubernetes_config
from octotrain.planning import recorded_plan
from octotrain.pods import KUEUE_API_GROUP, KUEUE_VERSION, pod_group_name
from octotrain.settings import get_settings

# Kueue's words for a resource its ClusterQueue lacks (pkg/scheduler/flavorassigner).
LACKING = re.compile(
    r"insufficient unused quota for (?P<resource>\S+) in flavor (?P<flavor>[^,\s]+), "
    r"(?P<more>\S+) more needed"
)
BEYOND = re.compile(
    r"insufficient quota for (?P<resource>\S+) in flavor (?P<flavor>[^,\s]+), .*"
    r"> maximum capacity \((?P<capacity>[^)]+)\)"
)
SHOWN_RESOURCES = ("nvidia.com/gpu", "cpu", "memory")


def workload_queue_state(run: Run) -> QueueState | None:
    """The run's place in Kueue (None: Kueue does not admit this launcher's pods, or the run's
    pods are not made yet)."""
    config = kubernetes_config()
    plan = recorded_plan(run)
    if config.admission != "kueue" or plan is None:
        return None
    settings = get_settings()
    runs = KubernetesRuns(conn_id=settings.kubernetes_conn_id,
                          namespace=settings.kubernetes_namespace)  # fmt: skip
    api = CustomObjectsApi(runs.hook.api_client)
    where = {"group": KUEUE_API_GROUP, "version": KUEUE_VERSION, "namespace": runs.namespace}
    try:
        workload = runs.call(api.get_namespaced_custom_object, **where, plural="workloads",
                             name=pod_group_name(run.task_id, plan.run_key))  # fmt: skip
    except ApiException as error:
        if error.status == HTTP_NOT_FOUND:
            return None
        raise
    queue = workload.get("spec", {}).get("queueName", "")
    cluster_queue = ""
    if queue:
        local_queue = runs.call(api.get_namespaced_custom_object, **where,
                                plural="localqueues", name=queue)  # fmt: skip
        cluster_queue = local_queue.get("spec", {}).get("clusterQueue", "")
    others = runs.call(api.list_namespaced_custom_object, **where, plural="workloads")
    return queue_state_of(workload, others.get("items", []), cluster_queue=cluster_queue)


def queue_state_of(
    workload: dict[str, Any], others: list[dict[str, Any]], *, cluster_queue: str
) -> QueueState:
    """``workload``'s place among the Workloads of its namespace (``others``, itself among them)."""
    spec, status = workload.get("spec", {}), workload.get("status", {})
    queue = spec.get("queueName", "")
    admitted = _condition(workload, "Admitted")
    admitted_at = (
        _time(admitted["lastTransitionTime"])
        if admitted and admitted.get("status") == "True"
        else None
    )
    asked = _requests(status) or _spec_requests(spec)
    shown_queue = f"{queue} (ClusterQueue {cluster_queue})" if cluster_queue else queue
    position, reason = None, ""
    if admitted_at is None:
        waiting = sorted(
            (other for other in others
             if other.get("spec", {}).get("queueName") == queue and _waits(other)),
            key=_kueue_order,
        )  # fmt: skip
        names = [other["metadata"]["name"] for other in waiting]
        name = workload["metadata"]["name"]
        position = names.index(name) + 1 if name in names else None
        reason = _reason(workload, cluster_queue, asked)
    return QueueState(
        queue=shown_queue,
        asked=_words(asked),
        requested_at=_time(workload["metadata"]["creationTimestamp"]),
        admitted_at=admitted_at,
        position=position,
        reason=reason,
    )


def never_admitted(workload: dict[str, Any], *, cluster_queue: str = "") -> str | None:
    """Why Kueue will never admit ``workload`` (it asks more than its ClusterQueue can ever
    give, borrowing included), with the numbers; None while it may still be admitted."""
    reserved = _condition(workload, "QuotaReserved") or {}
    found = BEYOND.search(str(reserved.get("message", "")))
    if found is None:
        return None
    resource = found["resource"]
    asked = _requests(workload.get("status", {})) or _spec_requests(workload.get("spec", {}))
    whose = f"ClusterQueue {cluster_queue}" if cluster_queue else "its ClusterQueue"
    return (
        f"never admitted: {whose} has at most {found['capacity']} {resource} in flavor "
        f"{found['flavor']}, the run needs {format_amount(asked.get(resource), resource)}"
    )


def _reason(workload: dict[str, Any], cluster_queue: str, asked: dict[str, float]) -> str:
    reserved = _condition(workload, "QuotaReserved") or {}
    message = str(reserved.get("message", ""))
    evicted = _condition(workload, "Evicted")
    again = ""
    if evicted and evicted.get("status") == "True":
        again = f" (evicted: {evicted.get('message', evicted.get('reason', ''))}; waiting again)"
    whose = f"ClusterQueue {cluster_queue}" if cluster_queue else "its ClusterQueue"
    if refused := never_admitted(workload, cluster_queue=cluster_queue):
        return refused
    if found := LACKING.search(message):
        resource = found["resource"]
        needs = format_amount(asked.get(resource), resource)
        return (
            f"waiting for quota: {whose} lacks {found['more']} more {resource} in flavor "
            f"{found['flavor']}, the run needs {needs}{again}"
        )
    if message:
        return f"waiting for quota in {whose}: {message}{again}"
    return f"waiting for Kueue to consider it in {whose}{again}"


def _waits(workload: dict[str, Any]) -> bool:
    """Still in the queue: no quota reserved, not finished."""
    reserved, finished = _condition(workload, "QuotaReserved"), _condition(workload, "Finished")
    return not (reserved and reserved.get("status") == "True") and not (
        finished and finished.get("status") == "True"
    )


def _kueue_order(workload: dict[str, Any]) -> tuple[int, str]:
    return (-int(workload.get("spec", {}).get("priority") or 0),
            workload["metadata"]["creationTimestamp"])  # fmt: skip


def _condition(workload: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for condition in workload.get("status", {}).get("conditions") or []:
        if condition.get("type") == kind:
            return condition
    return None


def _requests(status: dict[str, Any]) -> dict[str, float]:
    total: dict[str, float] = {}
    for pod_set in status.get("resourceRequests") or []:
        for name, amount in (pod_set.get("resources") or {}).items():
            total[name] = total.get(name, 0.0) + float(parse_quantity(amount))
    return total


def _spec_requests(spec: dict[str, Any]) -> dict[str, float]:
    """The pods' requests from the Workload's pod sets (an admitted Workload has no
    ``resourceRequests`` any more)."""
    total: dict[str, float] = {}
    for pod_set in spec.get("podSets") or []:
        count = int(pod_set.get("count") or 0)
        for container in pod_set.get("template", {}).get("spec", {}).get("containers") or []:
            requests = (container.get("resources") or {}).get("requests") or {}
            for name, amount in requests.items():
                total[name] = total.get(name, 0.0) + count * float(parse_quantity(amount))
    return total


def _words(asked: dict[str, float]) -> str:
    shown = [format_amount(asked[name], name) for name in SHOWN_RESOURCES if asked.get(name)]
    return ", ".join(shown)


def format_amount(amount: float | None, resource: str) -> str:
    """An amount of a resource in words ("2 GPUs", "1.5 GiB of memory", "3 cpu")."""
    if amount is None:
        return f"some {resource}"
    if resource == "memory":
        return f"{amount / 2**30:.3g} GiB of memory"
    if resource == "nvidia.com/gpu":
        return f"{amount:g} GPU" + ("" if amount == 1 else "s")
    return f"{amount:.3g} {resource}"


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
