"""Kubernetes resource quantities (``500m``, ``2``, ``128Mi``, ``1.5G``, ``1e3``), parsed
exactly (as fractions), because the scheduler compares sums of requests against capacity and a
float could turn ``0.1 + 0.2`` cpus into more than ``300m``."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+\.?\d*|\.\d+))(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$"
)

# The resources a node knows about; anything else a pod asks for is an
# extended resource the node does not have.
CPU = "cpu"
MEMORY = "memory"
GPU = "nvidia.com/gpu"


def parse_quantity(value: Any) -> Fraction:
    """The value of a quantity in base units (cores, bytes, devices).

    Raises ``ValueError`` for anything the API server would reject as a quantity."""
    if isinstance(value, bool):
        raise ValueError(f"quantities must match the regular expression: {value!r}")
    if isinstance(value, int | float):
        return Fraction(str(value))
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if not match:
        raise ValueError(
            f"quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {value!r}"
        )
    number = Fraction(match["number"])
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    return number * Fraction(10) ** int(suffix[1:])


def container_requests(container: dict[str, Any]) -> dict[str, Fraction]:
    """What a container asks the scheduler for: its requests, each defaulting to its limit
    (as the API server defaults them), as quantities."""
    resources = container.get("resources") or {}
    requests = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {name: parse_quantity(value) for name, value in requests.items()}


def pod_requests(spec: dict[str, Any]) -> dict[str, Fraction]:
    """What a pod asks the scheduler for: the sum over its containers, or the largest init
    container's request where that is more (init containers run one at a time, before the
    others)."""
    total: dict[str, Fraction] = {}
    for container in spec.get("containers") or []:
        for name, value in container_requests(container).items():
            total[name] = total.get(name, Fraction(0)) + value
    for container in spec.get("initContainers") or []:
        for name, value in container_requests(container).items():
            total[name] = max(total.get(name, Fraction(0)), value)
    return total


def memory_limit(container: dict[str, Any]) -> int | None:
    """The container's memory limit in bytes (what the OOM killer enforces), if any."""
    limits = (container.get("resources") or {}).get("limits") or {}
    if MEMORY not in limits:
        return None
    return math.floor(parse_quantity(limits[MEMORY]))
