"""What a container's process is started with: its environment (the pod spec's ``env`` and
``envFrom``, ``$(VAR)`` references expanded, ``valueFrom`` resolved, container paths and
cluster host names rewritten) on top of this machine's own environment (the process runs this
machine's programs, so it keeps ``PATH``, the virtualenv and the rest), and its argv."""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

from tests.k8s_node_agent.quantities import parse_quantity
from tests.k8s_node_agent.rewrite import LOOPBACK, Rewriter, expand
from tests.k8s_node_agent.volumes import object_data

# Looks up a ConfigMap or Secret by (kind, namespace, name); None when there is none.
Lookup = Callable[[str, str, str], dict[str, Any] | None]

_PYTHON = re.compile(r"^python(3(\.\d+)?)?$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


class ConfigError(Exception):
    """What the kubelet reports as ``CreateContainerConfigError`` (a missing Secret,
    ConfigMap or key); it retries until the object appears."""


def spec_environment(
    pod: dict[str, Any], container: dict[str, Any], lookup: Lookup, allocatable_cpu: Fraction
) -> dict[str, str]:
    """The variables the pod spec defines for the container, in Kubernetes' order (``envFrom``
    first, then ``env``, each able to refer to the ones before it), not yet rewritten."""
    namespace = pod["metadata"]["namespace"]
    variables: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix") or ""
        for kind, key in (("configmaps", "configMapRef"), ("secrets", "secretRef")):
            if key not in source:
                continue
            reference = source[key]
            found = lookup(kind, namespace, reference.get("name", ""))
            if found is None:
                if reference.get("optional"):
                    continue
                raise ConfigError(f'{_singular(kind)} "{reference.get("name")}" not found')
            for name, value in object_data(found).items():
                if _ENV_NAME.match(prefix + name):
                    variables[prefix + name] = value.decode("utf-8", errors="replace")
    for entry in container.get("env") or []:
        name = entry["name"]
        if "valueFrom" in entry:
            value = _value_from(pod, container, entry["valueFrom"], lookup, allocatable_cpu)
            if value is None:
                continue
            variables[name] = value
        else:
            variables[name] = expand(str(entry.get("value") or ""), variables)
    return variables


def _singular(kind: str) -> str:
    return {"configmaps": "configmap", "secrets": "secret"}[kind]


def _value_from(
    pod: dict[str, Any],
    container: dict[str, Any],
    source: dict[str, Any],
    lookup: Lookup,
    allocatable_cpu: Fraction,
) -> str | None:
    if "fieldRef" in source:
        return field_value(pod, source["fieldRef"]["fieldPath"])
    if "resourceFieldRef" in source:
        return _resource_value(pod, container, source["resourceFieldRef"], allocatable_cpu)
    for key, kind in (("configMapKeyRef", "configmaps"), ("secretKeyRef", "secrets")):
        if key in source:
            reference = source[key]
            found = lookup(kind, pod["metadata"]["namespace"], reference.get("name", ""))
            data = object_data(found) if found is not None else None
            if data is None or reference.get("key") not in data:
                if reference.get("optional"):
                    return None
                if data is None:
                    raise ConfigError(f'{_singular(kind)} "{reference.get("name")}" not found')
                raise ConfigError(
                    f"couldn't find key {reference.get('key')} in "
                    f"{'ConfigMap' if kind == 'configmaps' else 'Secret'} "
                    f"{pod['metadata']['namespace']}/{reference.get('name')}"
                )
            return data[reference["key"]].decode("utf-8", errors="replace")
    raise ConfigError(f"unsupported valueFrom: {sorted(source)}")


def field_value(pod: dict[str, Any], path: str) -> str:
    """The downward API's ``fieldRef`` values."""
    metadata = pod["metadata"]
    spec = pod["spec"]
    if match := re.match(r"^metadata\.(labels|annotations)\['(.+)'\]$", path):
        return str((metadata.get(match[1]) or {}).get(match[2], ""))
    values = {
        "metadata.name": metadata["name"],
        "metadata.namespace": metadata["namespace"],
        "metadata.uid": metadata["uid"],
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.hostIP": LOOPBACK,
        "status.hostIPs": LOOPBACK,
        "status.podIP": LOOPBACK,
        "status.podIPs": LOOPBACK,
    }
    if path not in values:
        raise ConfigError(f"unsupported fieldRef: {path}")
    return values[path]


def _resource_value(
    pod: dict[str, Any],
    container: dict[str, Any],
    reference: dict[str, Any],
    allocatable_cpu: Fraction,
) -> str:
    target = container
    if reference.get("containerName"):
        every = [*(pod["spec"].get("initContainers") or []), *pod["spec"]["containers"]]
        target = next((c for c in every if c["name"] == reference["containerName"]), container)
    kind, _, resource = reference["resource"].partition(".")
    resources = target.get("resources") or {}
    value = (resources.get(kind) or {}).get(resource)
    if value is None and kind == "requests":
        value = (resources.get("limits") or {}).get(resource)
    quantity = parse_quantity(value) if value is not None else None
    if quantity is None:
        quantity = allocatable_cpu if resource == "cpu" else Fraction(0)
    divisor = parse_quantity(reference.get("divisor") or "1")
    return str(math.ceil(quantity / divisor))


def process_environment(
    spec_variables: dict[str, str], rewriter: Rewriter, extra: dict[str, str]
) -> dict[str, str]:
    """This machine's environment (with the running Python's ``bin`` first on ``PATH``, so
    console scripts of the virtualenv are found), then ``extra`` (what the kubelet adds:
    ``HOSTNAME``, ``KUBERNETES_SERVICE_HOST`` ...), then the spec's variables, rewritten."""
    environment = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    environment["PATH"] = os.pathsep.join([bin_dir, environment.get("PATH", os.defpath)])
    environment.update(extra)
    environment.update({name: rewriter(value) for name, value in spec_variables.items()})
    return environment


def container_argv(
    container: dict[str, Any], spec_variables: dict[str, str], rewriter: Rewriter
) -> list[str]:
    """``command`` + ``args``, expanded and rewritten, ``python``/``python3`` as this
    interpreter. Without a ``command`` (the image's entrypoint, which the node agent cannot
    know), ``args`` alone are run."""
    words = [*(container.get("command") or []), *(container.get("args") or [])]
    argv = [rewriter(expand(str(word), spec_variables)) for word in words]
    if argv and _PYTHON.match(Path(argv[0]).name):
        argv[0] = sys.executable
    return argv
