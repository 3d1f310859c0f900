"""The one emulated node and the scheduler's filters for it: node selector and required node
affinity, then resource fit (cpu, memory, ``nvidia.com/gpu``, pod count, any extended
resource) against what the pods already bound there have requested. A pod that does not fit
stays ``Pending`` with ``PodScheduled=False/Unschedulable`` and a ``FailedScheduling`` event
worded as the real scheduler words it; it is tried again whenever a bound pod goes away."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from tests.k8s_emulator.quantities import (
    CPU,
    EPHEMERAL_STORAGE,
    GPU,
    MEMORY,
    PODS,
    container_requests,
    parse_quantity,
    pod_requests,
)

MAX_PODS = 110


@dataclass
class Node:
    name: str
    capacity: dict[str, Fraction]
    labels: dict[str, str]

    @classmethod
    def build(
        cls, name: str, cpu: str, memory: str, gpus: int, labels: dict[str, str] | None
    ) -> Node:
        capacity = {
            CPU: parse_quantity(cpu),
            MEMORY: parse_quantity(memory),
            PODS: Fraction(MAX_PODS),
            EPHEMERAL_STORAGE: parse_quantity("1Ti"),
        }
        if gpus:
            capacity[GPU] = Fraction(gpus)
        default_labels = {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
        }
        return cls(name, capacity, {**default_labels, **(labels or {})})


@dataclass
class Binding:
    """What a bound pod holds on the node."""

    requests: dict[str, Fraction]
    gpu_ids: list[int] = field(default_factory=list)


class Scheduler:
    """Binds pods to the node. Not thread-safe: the caller holds the store's lock."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self._bindings: dict[str, Binding] = {}

    def try_bind(self, uid: str, spec: dict[str, Any]) -> tuple[Binding | None, str]:
        """Bind the pod if it fits; otherwise None and the ``FailedScheduling`` message."""
        if not self._node_matches(spec):
            return (
                None,
                "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.",
            )
        requests = pod_requests(spec)
        requests[PODS] = Fraction(1)
        used: dict[str, Fraction] = {}
        for binding in self._bindings.values():
            for name, value in binding.requests.items():
                used[name] = used.get(name, Fraction(0)) + value
        short = sorted(
            ("Too many pods" if name == PODS else f"Insufficient {name}")
            for name, value in requests.items()
            if value > 0 and value > self.node.capacity.get(name, Fraction(0)) - used.get(name, 0)
        )
        if short:
            return None, "0/1 nodes are available: " + ", ".join(f"1 {s}" for s in short) + "."
        taken = {gpu for binding in self._bindings.values() for gpu in binding.gpu_ids}
        free = [i for i in range(int(self.node.capacity.get(GPU, 0))) if i not in taken]
        binding = Binding(requests, free[: int(requests.get(GPU, 0))])
        self._bindings[uid] = binding
        return binding, ""

    def release(self, uid: str) -> None:
        self._bindings.pop(uid, None)

    def _node_matches(self, spec: dict[str, Any]) -> bool:
        labels = self.node.labels
        for key, value in (spec.get("nodeSelector") or {}).items():
            if labels.get(key) != value:
                return False
        required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        ) or {}
        terms = required.get("nodeSelectorTerms") or []
        return not terms or any(self._term_matches(term) for term in terms)

    def _term_matches(self, term: dict[str, Any]) -> bool:
        expressions = term.get("matchExpressions") or []
        fields = term.get("matchFields") or []
        if not expressions and not fields:
            return False  # an empty term matches no node
        labels = self.node.labels
        checks = [(e, labels.get(e["key"])) for e in expressions]
        checks += [(f, self.node.name if f["key"] == "metadata.name" else None) for f in fields]
        return all(_expression_matches(e, value) for e, value in checks)


def _expression_matches(expression: dict[str, Any], value: str | None) -> bool:
    operator = expression.get("operator")
    values = expression.get("values") or []
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and values:
        try:
            number, bound = int(value), int(values[0])
        except ValueError:
            return False
        return number > bound if operator == "Gt" else number < bound
    return False


def container_gpu_ids(binding: Binding, spec: dict[str, Any], name: str) -> list[int]:
    """The GPUs of the pod's binding that the named container gets (as the device plugin
    hands them out): init containers reuse the pod's first GPUs; regular containers get
    consecutive shares."""
    for container in spec.get("initContainers") or []:
        if container["name"] == name:
            return binding.gpu_ids[: int(container_requests(container).get(GPU, 0))]
    start = 0
    for container in spec.get("containers") or []:
        count = int(container_requests(container).get(GPU, 0))
        if container["name"] == name:
            return binding.gpu_ids[start : start + count]
        start += count
    return []
