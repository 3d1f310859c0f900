"""Kubernetes RBAC as an API server applies it, for the tests of the deployment files: the
launcher's Role in config/kubernetes/rbac.yaml, and the authorization attributes (verb,
resource, namespace) that an API request is checked with, derived from its method and path
the way the API server's request-info resolver does for the core and named API groups."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from octotrain.settings import REPO_ROOT
from tests.k8s_control_plane import ControlPlane, create

RBAC_FILE = REPO_ROOT / "config" / "kubernetes" / "rbac.yaml"
# The launcher's Role beside it when Kueue admits the runs' pods.
KUEUE_RBAC_FILE = REPO_ROOT / "config" / "kubernetes" / "rbac-kueue.yaml"
VOLCANO_RBAC_FILE = REPO_ROOT / "config" / "kubernetes" / "rbac-volcano.yaml"
# Non-resource paths that every authenticated client may read (the default ClusterRoles
# system:discovery and system:public-info-viewer): API discovery, version and health.
DISCOVERY_PATHS = frozenset(
    {"/api", "/api/v1", "/apis", "/version", "/healthz", "/livez", "/readyz", "/openapi/v2"}
)
# What every authenticated user may ask of the API server about itself (the default
# ClusterRole system:basic-user): who it is, and whether it may do something.
BASIC_USER_GRANTS = frozenset({
    ("authentication.k8s.io", "selfsubjectreviews", "create"),
    ("authorization.k8s.io", "selfsubjectaccessreviews", "create"),
})  # fmt: skip
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


@dataclass(frozen=True, order=True)
class Access:
    """What a request asks for: ``verb`` on ``resource`` (``pods`` or a subresource such as
    ``pods/log``) of ``api_group`` (``""``: core) in ``namespace`` (None: cluster-wide)."""

    verb: str
    resource: str
    namespace: str | None
    api_group: str = ""


def documents(path: Path = RBAC_FILE) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def launcher_role(path: Path = RBAC_FILE) -> dict[str, Any]:
    """The file's Role for the launcher (a file may hold others: the console's)."""
    [role] = [doc for doc in documents(path) if doc["kind"] == "Role"
              and doc["metadata"]["name"].startswith("octotrain-launcher")]  # fmt: skip
    return role


def grants(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    """Every (API group, resource, verb) a Role's rules allow."""
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def allows(role: dict[str, Any], access: Access) -> bool:
    """A Role allows only calls in its own namespace, and only what its rules list."""
    return access.namespace == role["metadata"]["namespace"] and (
        (access.api_group, access.resource, access.verb) in grants(role)
    )


def request_access(method: str, path: str) -> Access | None:
    """The attributes an API server authorizes a request by; None for a non-resource path
    (discovery, version, health)."""
    url = urlsplit(path)
    parts = [part for part in url.path.split("/") if part]
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return None
    if not rest:
        return None  # a group version's resource list (discovery)
    namespace = rest[1] if rest[0] == "namespaces" and len(rest) >= 2 else None
    if namespace is not None and len(rest) >= 3:  # a resource in the namespace
        rest = rest[2:]
    resource, name = rest[0], rest[1] if len(rest) > 1 else None
    if len(rest) > 2:
        resource += "/" + rest[2]
    # As the API server converts a query parameter to a bool: only "", "0" and "false" (in any
    # case) are false (kubernetes_asyncio sends watch=True).
    watch = parse_qs(url.query).get("watch", [""])[0].lower() not in ("", "0", "false")
    if method in ("GET", "HEAD"):
        verb = "watch" if watch else ("get" if name else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = _VERBS[method]
    return Access(verb=verb, resource=resource, namespace=namespace, api_group=group)


# Where each kind of the file is created (in the training namespace it names).
SHIPPED_PATHS = {
    "Namespace": "/api/v1/namespaces",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/octotrain/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/octotrain/rolebindings",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
}


def apply_shipped(plane: ControlPlane, path: Path = RBAC_FILE) -> list[dict[str, Any]]:
    """The shipped documents of ``path`` created in the tests' control plane (each left as it
    is when it exists already); the documents."""
    shipped = documents(path)
    for document in shipped:
        create(plane, SHIPPED_PATHS[document["kind"]], document)
    return shipped


def worker_account() -> dict[str, str]:
    """The worker's service account, which the shipped RoleBinding names first."""
    [binding] = [document for document in documents() if document["kind"] == "RoleBinding"]
    return dict(binding["subjects"][0])


def bind_role_without(plane: ControlPlane, account: str, resource: str) -> None:
    """The service account ``account`` of the training namespace bound to a Role named after
    it: the shipped Role less its rule for ``resource``."""
    role = launcher_role()
    rules = [rule for rule in role["rules"] if rule["resources"] != [resource]]
    assert len(rules) == len(role["rules"]) - 1, f"no rule of its own for {resource}"
    namespace = role["metadata"]["namespace"]
    create(plane, SHIPPED_PATHS["Role"], role | {"metadata": {"name": account}, "rules": rules})
    create(plane, SHIPPED_PATHS["RoleBinding"], {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": account},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    })  # fmt: skip
