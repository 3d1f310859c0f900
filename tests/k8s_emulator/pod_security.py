"""Pod Security Admission, as the API server enforces a namespace's level: a pod that breaks
the Pod Security Standards' ``restricted`` profile (or ``baseline``, in a namespace declared
so; ``privileged``: nothing enforced) is refused with 403 ``Forbidden`` and PSA's own message
(``violates PodSecurity "restricted:v1.29": allowPrivilegeEscalation != false (container
"base" must set ...)``), so a launcher that drops one setting fails here as on a real cluster.
The emulator adds the causes (one per rule, its ``field``) for tests to read.

Checked: the pod- and container-level controls of both profiles (host namespaces, privileged,
capabilities, host ports, seccomp, procMount, sysctls, allowPrivilegeEscalation, runAsNonRoot,
runAsUser 0). Not checked: AppArmor and SELinux options, and volume types (``restricted``
allows only configMap, csi, downwardAPI, emptyDir, ephemeral, persistentVolumeClaim, projected
and secret volumes; both profiles forbid hostPath, which the node cache and a node-local work
folder are: the README names that exception)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from tests.k8s_emulator.objects import ApiError

RESTRICTED = "restricted"
BASELINE = "baseline"
PRIVILEGED = "privileged"  # nothing enforced
LEVELS = (RESTRICTED, BASELINE, PRIVILEGED)
_PSA_VERSION = "v1.29"
_BASELINE_CAPABILITIES = {
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}  # fmt: skip
_SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}  # fmt: skip

# Pod- and container-level settings that meet ``restricted``, for tests' own pods.
RESTRICTED_POD_CONTEXT = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_CONTAINER_CONTEXT = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
}


class Violation(NamedTuple):
    """One broken rule: PSA's words for it and the field that breaks it."""

    rule: str
    detail: str
    field: str


def check_pod_security(pod: dict[str, Any], level: str) -> None:
    """Raise PSA's 403 when ``pod`` breaks the namespace's ``level``."""
    found = list(violations(pod, level))
    if not found:
        return
    name = pod["metadata"].get("name", "")
    listed = ", ".join(f"{v.rule} ({v.detail})" for v in found)
    causes = [{"reason": "FieldValueForbidden", "message": v.rule, "field": v.field} for v in found]
    raise ApiError(
        403,
        "Forbidden",
        f'pods "{name}" is forbidden: violates PodSecurity "{level}:{_PSA_VERSION}": {listed}',
        {"name": name, "kind": "pods", "causes": causes},
    )


def violations(pod: dict[str, Any], level: str) -> Iterator[Violation]:
    """Every rule of ``level`` that ``pod`` breaks, in PSA's order."""
    if level not in LEVELS:
        raise ValueError(f"pod security level {level!r} is not one of {', '.join(LEVELS)}")
    if level == PRIVILEGED:
        return
    spec = pod.get("spec") or {}
    pod_context = spec.get("securityContext") or {}
    containers = list(_containers(spec))
    yield from _baseline(spec, pod_context, containers)
    if level == RESTRICTED:
        yield from _restricted(pod_context, containers)


def _containers(spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for index, container in enumerate(spec.get(field) or []):
            yield f"spec.{field}[{index}]", container, container.get("securityContext") or {}


def _baseline(
    spec: dict[str, Any],
    pod_context: dict[str, Any],
    containers: list[tuple[str, dict[str, Any], dict[str, Any]]],
) -> Iterator[Violation]:
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            yield Violation("host namespaces", f"{key}=true", f"spec.{key}")
    for where, container, context in containers:
        name = container.get("name", "")
        if context.get("privileged"):
            yield Violation(
                "privileged", f'container "{name}" must not set securityContext.privileged=true',
                f"{where}.securityContext.privileged",
            )  # fmt: skip
        added = set((context.get("capabilities") or {}).get("add") or []) - _BASELINE_CAPABILITIES
        if added:
            yield Violation(
                "non-default capabilities",
                f'container "{name}" must not include {", ".join(sorted(added))} in '
                "securityContext.capabilities.add",
                f"{where}.securityContext.capabilities.add",
            )
        for p_index, port in enumerate(container.get("ports") or []):
            if port.get("hostPort"):
                yield Violation(
                    "hostPort", f'container "{name}" uses hostPort {port["hostPort"]}',
                    f"{where}.ports[{p_index}].hostPort",
                )  # fmt: skip
        if context.get("procMount", "Default") != "Default":
            yield Violation(
                "procMount", f'container "{name}" must not set securityContext.procMount',
                f"{where}.securityContext.procMount",
            )  # fmt: skip
        if _seccomp(context) == "Unconfined":
            yield Violation(
                "seccompProfile", f'container "{name}" must not set '
                "securityContext.seccompProfile.type to \"Unconfined\"",
                f"{where}.securityContext.seccompProfile.type",
            )  # fmt: skip
    if _seccomp(pod_context) == "Unconfined":
        yield Violation(
            "seccompProfile",
            'pod must not set securityContext.seccompProfile.type to "Unconfined"',
            "spec.securityContext.seccompProfile.type",
        )  # fmt: skip
    for s_index, sysctl in enumerate(pod_context.get("sysctls") or []):
        if sysctl.get("name") not in _SAFE_SYSCTLS:
            yield Violation(
                "forbidden sysctls", str(sysctl.get("name")),
                f"spec.securityContext.sysctls[{s_index}].name",
            )  # fmt: skip


def _restricted(
    pod_context: dict[str, Any], containers: list[tuple[str, dict[str, Any], dict[str, Any]]]
) -> Iterator[Violation]:
    for where, container, context in containers:
        if context.get("allowPrivilegeEscalation") is not False:
            yield Violation(
                "allowPrivilegeEscalation != false",
                f'container "{container.get("name", "")}" must set '
                "securityContext.allowPrivilegeEscalation=false",
                f"{where}.securityContext.allowPrivilegeEscalation",
            )
    for where, container, context in containers:
        capabilities = context.get("capabilities") or {}
        name = container.get("name", "")
        if "ALL" not in (capabilities.get("drop") or []):
            yield Violation(
                "unrestricted capabilities",
                f'container "{name}" must set securityContext.capabilities.drop=["ALL"]',
                f"{where}.securityContext.capabilities.drop",
            )
        if set(capabilities.get("add") or []) - {"NET_BIND_SERVICE"}:
            yield Violation(
                "unrestricted capabilities",
                f'container "{name}" must not include capabilities other than NET_BIND_SERVICE '
                "in securityContext.capabilities.add",
                f"{where}.securityContext.capabilities.add",
            )
    pod_non_root = pod_context.get("runAsNonRoot") is True
    for where, container, context in containers:
        own = context.get("runAsNonRoot")
        if own is False or (own is None and not pod_non_root):
            yield Violation(
                "runAsNonRoot != true",
                f'container "{container.get("name", "")}" must not set '
                "securityContext.runAsNonRoot=false"
                if own is False
                else "pod or container "
                f'"{container.get("name", "")}" must set securityContext.runAsNonRoot=true',
                f"{where}.securityContext.runAsNonRoot",
            )
    if pod_context.get("runAsUser") == 0:
        yield Violation(
            "runAsUser=0", "pod must not set runAsUser=0", "spec.securityContext.runAsUser"
        )
    for where, container, context in containers:
        if context.get("runAsUser") == 0:
            yield Violation(
                "runAsUser=0", f'container "{container.get("name", "")}" must not set runAsUser=0',
                f"{where}.securityContext.runAsUser",
            )  # fmt: skip
    pod_seccomp = _seccomp(pod_context)
    for where, container, context in containers:
        own = _seccomp(context) or pod_seccomp
        if own not in ("RuntimeDefault", "Localhost"):
            yield Violation(
                "seccompProfile",
                f'pod or container "{container.get("name", "")}" must set '
                'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"',
                f"{where}.securityContext.seccompProfile.type",
            )


def _seccomp(context: dict[str, Any]) -> str:
    return str((context.get("seccompProfile") or {}).get("type") or "")
