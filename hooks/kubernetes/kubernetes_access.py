"""The launcher's access to the cluster, checked before a run creates anything there: the Airflow
Kubernetes connection must load, reach the API server and be accepted by it, and its user must
hold every permission of ``octotrain.launcher_permissions`` in the training namespace (asked of
the API server itself with ``SelfSubjectAccessReview``, which every authenticated user may
create); with Kueue, the run's LocalQueue must exist and the ClusterQueue behind it must be
able to hold the whole run. A failure is one sentence that names the connection, the user and
the missing permissions (or the queue and the numbers), instead of a client's stack trace half
way into a run.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from kubernetes.client import AuthenticationV1Api, AuthorizationV1Api, CustomObjectsApi
from kubernetes.client.rest import ApiException
from kubernetes.config.config_exception import ConfigException
from urllib3.exceptions import HTTPError

from hooks.kubernetes.kubernetes_runs import KubernetesRuns, LauncherForbidden
from hooks.kubernetes.kueue_quota import Requests, beyond_cluster_queue
from octotrain.launcher_permissions import KUEUE_RBAC_FILE, LAUNCHER_PERMISSIONS, Permission
from octotrain.pods import KUEUE_API_GROUP, KUEUE_VERSION

HTTP_UNAUTHORIZED = 401
HTTP_NOT_FOUND = 404
CONFIG_FILE = "config/kubernetes.toml"
log = logging.getLogger(__name__)


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


def check_kueue_queue(runs: KubernetesRuns, *, queue: str, project: str, asked: Requests) -> None:
    """Raise ``LauncherAccessError`` unless Kueue is installed, the LocalQueue ``queue`` of
    ``project`` exists in ``runs``' namespace (a run whose queue is missing would wait
    forever, its pods never admitted), and the ClusterQueue behind it could ever give what the
    run ``asked`` (``hooks.kubernetes.kueue_quota``)."""
    api = CustomObjectsApi(runs.hook.api_client)
    try:
        local_queue = runs.call(api.get_namespaced_custom_object, group=KUEUE_API_GROUP,
                                version=KUEUE_VERSION, namespace=runs.namespace,
                                plural="localqueues", name=queue)  # fmt: skip
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
    behind = str(local_queue.get("spec", {}).get("clusterQueue", ""))
    cluster_queue = _cluster_queue(runs, api, behind)
    if cluster_queue is not None and (refused := beyond_cluster_queue(asked, cluster_queue)):
        raise LauncherAccessError(f"the run does not fit in the LocalQueue '{queue}': {refused}")


def _cluster_queue(runs: KubernetesRuns, api: CustomObjectsApi, name: str) -> dict[str, Any] | None:
    """The ClusterQueue ``name`` (None where the launcher may not read it: Kueue's own verdict
    then refuses a run too large for it, at its launch)."""
    try:
        found = runs.call(api.get_cluster_custom_object, group=KUEUE_API_GROUP,
                          version=KUEUE_VERSION, plural="clusterqueues", name=name)  # fmt: skip
    except (LauncherForbidden, ApiException) as error:
        if isinstance(error, ApiException) and error.status != HTTP_NOT_FOUND:
            raise
        log.warning(
            "cannot read the ClusterQueue %s (%s); grant the ClusterRole of %s to check a run's "
            "size against it before its pods are made", name, error, KUEUE_RBAC_FILE,
        )  # fmt: skip
        return None
    return dict(found)


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
