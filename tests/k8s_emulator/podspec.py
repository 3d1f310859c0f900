"""Validation and defaulting of a new pod, as the API server does them on create, so that a
pod the real server would refuse is refused here (422 ``Invalid``) and a stored pod reads back
with the fields the server fills in (``restartPolicy``, ``terminationGracePeriodSeconds``,
``imagePullPolicy``, ``qosClass`` ...)."""

from __future__ import annotations

from typing import Any

from tests.k8s_emulator.objects import DNS_LABEL, DNS_SUBDOMAIN, ApiError, invalid
from tests.k8s_emulator.quantities import CPU, MEMORY, parse_quantity

DEFAULT_GRACE_SECONDS = 30
TERMINATION_LOG = "/dev/termination-log"


def _containers(spec: dict[str, Any]) -> list[tuple[str, int, dict[str, Any]]]:
    return [
        (field, index, container)
        for field in ("initContainers", "containers")
        for index, container in enumerate(spec.get(field) or [])
    ]


def validate_pod(pod: dict[str, Any]) -> None:
    """Raise 422 ``ApiError`` for what the API server would reject."""
    name = pod["metadata"].get("name") or ""
    errors: list[str] = []
    if len(name) > 253 or not DNS_SUBDOMAIN.match(name):
        errors.append(
            f'metadata.name: Invalid value: "{name}": a lowercase RFC 1123 subdomain must '
            "consist of lower case alphanumeric characters, '-' or '.', and must start and end "
            "with an alphanumeric character"
        )
    spec = pod.get("spec")
    if not isinstance(spec, dict) or not spec.get("containers"):
        errors.append("spec.containers: Required value")
        raise invalid("pods", name, ", ".join(errors))
    volumes = [v.get("name") for v in spec.get("volumes") or []]
    if len(set(volumes)) != len(volumes):
        errors.append("spec.volumes: Duplicate value")
    seen: set[str] = set()
    for field, index, container in _containers(spec):
        where = f"spec.{field}[{index}]"
        container_name = container.get("name") or ""
        if not container_name:
            errors.append(f"{where}.name: Required value")
        elif not DNS_LABEL.match(container_name) or len(container_name) > 63:
            errors.append(f'{where}.name: Invalid value: "{container_name}"')
        elif container_name in seen:
            errors.append(f'{where}.name: Duplicate value: "{container_name}"')
        seen.add(container_name)
        if not container.get("image"):
            errors.append(f"{where}.image: Required value")
        mount_paths: set[str] = set()
        for m_index, mount in enumerate(container.get("volumeMounts") or []):
            if mount.get("name") not in volumes:
                errors.append(
                    f'{where}.volumeMounts[{m_index}].name: Not found: "{mount.get("name")}"'
                )
            path = mount.get("mountPath") or ""
            if not path:
                errors.append(f"{where}.volumeMounts[{m_index}].mountPath: Required value")
            elif path in mount_paths:
                errors.append(
                    f"{where}.volumeMounts[{m_index}].mountPath: "
                    f'Invalid value: "{path}": must be unique'
                )
            mount_paths.add(path)
        errors += _resource_errors(where, container.get("resources") or {})
    for key in ("hostname", "subdomain"):
        value = spec.get(key)
        if value and (not DNS_LABEL.match(value) or len(value) > 63):
            errors.append(f'spec.{key}: Invalid value: "{value}"')
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or grace < 0):
        errors.append(f"spec.terminationGracePeriodSeconds: Invalid value: {grace}")
    if errors:
        raise invalid("pods", name, ", ".join(errors))


def _resource_errors(where: str, resources: dict[str, Any]) -> list[str]:
    errors: list[str] = []
    parsed: dict[str, dict[str, Any]] = {}
    for kind in ("limits", "requests"):
        parsed[kind] = {}
        for resource, value in (resources.get(kind) or {}).items():
            try:
                parsed[kind][resource] = parse_quantity(value)
            except ValueError as error:
                errors.append(f"{where}.resources.{kind}[{resource}]: Invalid value: {error}")
                continue
            if parsed[kind][resource] < 0:
                errors.append(
                    f"{where}.resources.{kind}[{resource}]: must be greater than or equal to 0"
                )
            if "/" in resource and parsed[kind][resource].denominator != 1:
                errors.append(f"{where}.resources.{kind}[{resource}]: must be an integer")
    for resource, request in parsed["requests"].items():
        limit = parsed["limits"].get(resource)
        if "/" in resource and limit is None:
            errors.append(
                f"{where}.resources.limits: Required value: "
                "Limit must be set for non overcommitable resources"
            )
        elif "/" in resource and limit != request:
            errors.append(
                f"{where}.resources.requests[{resource}]: must be equal to {resource} limit"
            )
        elif limit is not None and request > limit:
            errors.append(
                f"{where}.resources.requests: Invalid value: "
                f"must be less than or equal to {resource} limit"
            )
    return errors


def default_pod(pod: dict[str, Any]) -> None:
    """Fill in what the API server defaults on create."""
    spec = pod["spec"]
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
    spec.setdefault("serviceAccountName", spec.get("serviceAccount") or "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    for _, _, container in _containers(spec):
        container.setdefault("terminationMessagePath", TERMINATION_LOG)
        container.setdefault("terminationMessagePolicy", "File")
        container.setdefault("resources", {})
        image = container["image"]
        last = image.rsplit("/", 1)[-1]
        untagged = ":" not in last and "@" not in image
        pull = "Always" if untagged or last.endswith(":latest") else "IfNotPresent"
        container.setdefault("imagePullPolicy", pull)
    pod["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}


def qos_class(spec: dict[str, Any]) -> str:
    """``Guaranteed``, ``Burstable`` or ``BestEffort``, from cpu and memory requests and
    limits."""
    containers = [c for _, _, c in _containers(spec)]
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        limits = resources.get("limits") or {}
        requests = {**limits, **(resources.get("requests") or {})}
        for resource in (CPU, MEMORY):
            if resource in requests or resource in limits:
                any_set = True
            if resource not in limits or parse_quantity(
                requests.get(resource, 0)
            ) != parse_quantity(limits[resource]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def normalized_image(image: str) -> str:
    """The full reference of an image name (``busybox`` is ``docker.io/library/busybox:latest``),
    as containerd reports it in pull errors."""
    first, _, rest = image.partition("/")
    if not rest or ("." not in first and ":" not in first and first != "localhost"):
        image = f"docker.io/{image if rest else 'library/' + image}"
    last = image.rsplit("/", 1)[-1]
    if ":" not in last and "@" not in image:
        image += ":latest"
    return image


def raise_if_not_pod(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict) or body.get("kind", "Pod") != "Pod":
        raise ApiError(400, "BadRequest", "the body of the request was in an unknown format")
    return body
