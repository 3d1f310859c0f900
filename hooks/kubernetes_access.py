"""The launcher's access to the cluster, checked before a run creates anything there: the Airflow
Kubernetes connection must load, reach the API server and be accepted by it, and its user must
hold every permission of ``octotrain.launcher_permissions`` in the training namespace (asked of
the API server itself with ``SelfSubjectAccessReview``, which every authenticated user may
create); with Kueue, the run's LocalQueue must exist. A failure is one sentence that names the
connection, the user and the missing permissions, instead of a client's stack trace half way
into a run.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes.client import AuthenticationV1Api, AuthorizationV1Api, CustomObjectsApi
from kubernetes.client.rest import ApiException
from kubernetes.config.config_exception import ConfigException
from urllib3.exceptions import HTTPError

from hooks.kubernetes_runs import KubernetesRuns
from octotrain.launcher_permissions import LAUNCHER_PERMISSIONS, Permission
from octotrain.pods import KUEUE_API_GROUP, KUEUE_VERSION

HTTP_UNAUTHORIZED = 401
HTTP_NOT_FOUND = 404
CONFIG_FILE = "config/kubernetes.toml"


class LauncherAccessError(RuntimeError):
    """The launcher cannot use the cluster; the message says why and what to change."""


def check_launcher_access(
    runs: KubernetesRuns,
    *,
    conn_id: str,
    permissions: tuple[Permission, ...] = LAUNCHER_PERMISSIONS,
) -> None:
    """Raise ``LauncherAccessError`` unless the connection ``conn_id`` (which ``runs`` uses)
    reaches the API server as a user holding every one of ``permissions`` in ``runs``'
    namespace."""
    try:
        client = runs.hook.api_client
        user = _user(runs, AuthenticationV1Api(client))
        authorization = AuthorizationV1Api(client)
        missing = [p for p in permissions if not _allowed(runs, authorization, p)]
    except ConfigException as error:
        raise LauncherAccessError(
            f"the Kubernetes connection '{conn_id}' cannot be used: {error}"
        ) from None
    except ApiException as error:
        if error.status == HTTP_UNAUTHORIZED:
            raise LauncherAccessError(
                f"the Kubernetes API at {_host(runs)} refused the credentials of the connection "
                f"'{conn_id}' (401 Unauthorized): its kubeconfig's token or client certificate "
                "is wrong or has expired"
            ) from None
        raise
    except HTTPError as error:
        raise LauncherAccessError(
            f"the Kubernetes API at {_host(runs)} (connection '{conn_id}') cannot be reached: "
            f"{error}"
        ) from None
    if missing:
        listed = ", ".join(str(permission) for permission in missing)
        files = sorted({permission.granted_by for permission in missing})
        roles = " and ".join(files)
        raise LauncherAccessError(
            f"the launcher's Kubernetes user {user} (connection '{conn_id}') may not {listed} "
            f"in the namespace {runs.namespace}; grant it the Role of {roles} "
            f"(kubectl apply -f {' -f '.join(files)})"
        )


def check_kueue_queue(runs: KubernetesRuns, *, queue: str, project: str) -> None:
    """Raise ``LauncherAccessError`` unless Kueue is installed and the LocalQueue ``queue`` of
    ``project`` exists in ``runs``' namespace (a run whose queue is missing would wait
    forever, its pods never admitted)."""
    api = CustomObjectsApi(runs.hook.api_client)
    try:
        runs.call(api.get_namespaced_custom_object, group=KUEUE_API_GROUP, version=KUEUE_VERSION,
                  namespace=runs.namespace, plural="localqueues", name=queue)  # fmt: skip
    except ApiException as error:
        if error.status != HTTP_NOT_FOUND:
            raise
        if not _object_missing(error):
            raise LauncherAccessError(
                "Kueue is not installed in the cluster (it has no LocalQueue kind: the CRD "
                f"localqueues.{KUEUE_API_GROUP} is missing), but {CONFIG_FILE} says admission = "
                f'"kueue"; install Kueue, or set admission = "" there'
            ) from None
        raise LauncherAccessError(
            f"the LocalQueue '{queue}' of project {project} does not exist in the namespace "
            f"{runs.namespace}: its runs would never be admitted; create it (a LocalQueue "
            f"pointing at a ClusterQueue), or change [kueue] local_queue in {CONFIG_FILE}"
        ) from None


def _object_missing(error: ApiException) -> bool:
    """A 404 for an object of a kind the API serves (its ``Status`` names the object), not
    for a kind it does not know (a plain "page not found")."""
    try:
        status = json.loads(error.body or "")
    except ValueError:
        return False
    return isinstance(status, dict) and bool((status.get("details") or {}).get("name"))


def _user(runs: KubernetesRuns, api: AuthenticationV1Api) -> str:
    """Who the API server takes the connection for (``SelfSubjectReview``)."""
    review = runs.call(api.create_self_subject_review, body={
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})  # fmt: skip
    return f'"{review.status.user_info.username}"'


def _allowed(runs: KubernetesRuns, api: AuthorizationV1Api, permission: Permission) -> bool:
    attributes: dict[str, Any] = {"namespace": runs.namespace, "verb": permission.verb,
                                  "group": permission.api_group}  # fmt: skip
    resource, _, subresource = permission.resource.partition("/")
    attributes |= {"resource": resource, "subresource": subresource}
    review = runs.call(api.create_self_subject_access_review, body={
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes}})  # fmt: skip
    return bool(review.status.allowed)


def _host(runs: KubernetesRuns) -> str:
    return str(runs.hook.api_client.configuration.host)
