"""What Octotrain's Kubernetes launcher must be allowed in its training namespace: the one list
that the launcher checks before a run creates anything (``hooks.kubernetes.kubernetes_access``) and
that the shipped Role (``config/kubernetes/rbac.yaml``) grants, no more and no less (a test holds
the two together); and, when Kueue admits the runs' pods, what ``rbac-kueue.yaml`` grants
beside it."""

from __future__ import annotations

from dataclasses import dataclass

RBAC_FILE = "config/kubernetes/rbac.yaml"
KUEUE_RBAC_FILE = "config/kubernetes/rbac-kueue.yaml"
VOLCANO_RBAC_FILE = "config/kubernetes/rbac-volcano.yaml"


@dataclass(frozen=True, order=True)
class Permission:
    """``verb`` on ``resource`` (``pods``, or a subresource such as ``pods/log``) of the API
    group ``api_group`` (``""``: the core group), in the training namespace."""

    api_group: str
    resource: str
    verb: str
    granted_by: str = RBAC_FILE  # the shipped file whose Role grants it

    def __str__(self) -> str:
        group = f" ({self.api_group})" if self.api_group else ""
        return f"{self.verb} {self.resource}{group}"


def _each(api_group: str, resource: str, *verbs: str) -> tuple[Permission, ...]:
    return tuple(Permission(api_group, resource, verb) for verb in verbs)


LAUNCHER_PERMISSIONS: tuple[Permission, ...] = (
    *_each("", "pods", "create", "get", "list", "patch", "delete"),
    *_each("", "pods/log", "get"),
    *_each("", "services", "create", "delete"),
    *_each("", "secrets", "create", "delete"),
    *_each("networking.k8s.io", "networkpolicies", "create", "delete"),
    *_each("", "events", "list", "watch"),
)


# Beside them with admission = "kueue": the LocalQueue of a run's project, checked before the run,
# and the runs' Workloads, read for where a waiting run stands (hooks/kubernetes/kueue_workloads.py)
# and deleted with the run's other objects.
KUEUE_PERMISSIONS: tuple[Permission, ...] = (
    Permission("kueue.x-k8s.io", "localqueues", "get", granted_by=KUEUE_RBAC_FILE),
    Permission("kueue.x-k8s.io", "workloads", "get", granted_by=KUEUE_RBAC_FILE),
    Permission("kueue.x-k8s.io", "workloads", "list", granted_by=KUEUE_RBAC_FILE),
    Permission("kueue.x-k8s.io", "workloads", "delete", granted_by=KUEUE_RBAC_FILE),
)


# Beside them with admission = "volcano": the run's PodGroup, made and deleted with its Service.
VOLCANO_PERMISSIONS: tuple[Permission, ...] = tuple(
    Permission("scheduling.volcano.sh", "podgroups", verb, granted_by=VOLCANO_RBAC_FILE)
    for verb in ("create", "delete")
)
