"""The door to the cluster for what a run does beside its pods' own lifecycle (which the
KubernetesPodOperator drives): the headless Service and the NetworkPolicy of a run, the pods of
a run (to diagnose and delete them), and their events. Connects through Airflow's Kubernetes
connection (in-cluster, a kubeconfig path or a kubeconfig in the connection). Every call is
tried again on transient errors (``hooks.kubernetes.kubernetes_retry``), as the provider does its
own."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import tenacity
from airflow.providers.cncf.kubernetes.hooks.kubernetes import KubernetesHook
from kubernetes.client import (
    ApiClient,
    CoreV1Api,
    CustomObjectsApi,
    NetworkingV1Api,
    V1DeleteOptions,
)
from kubernetes.client.rest import ApiException

from hooks.kubernetes.kubernetes_retry import api_retrying
from octotrain.launcher_permissions import RBAC_FILE
from octotrain.pods import KUEUE_API_GROUP, KUEUE_VERSION, VOLCANO_API_GROUP, VOLCANO_VERSION

HTTP_CONFLICT = 409
HTTP_NOT_FOUND = 404
HTTP_FORBIDDEN = 403


class LauncherForbidden(RuntimeError):
    """The cluster refused a call of the launcher for want of a permission; the message is the
    API server's, which names the user, the verb, the resource and the namespace, and says where
    the permission is granted."""


def forbidden(error: ApiException) -> LauncherForbidden | None:
    """An authorization refusal in the API server's words, without the client's dump of
    headers and body; None for another 403 (an admission plugin's, which says its own why)."""
    try:
        message = str(json.loads(error.body or "{}").get("message") or error.reason)
    except ValueError:
        message = str(error.reason)
    if not re.search(r"\bcannot \w+ resource\b", message):
        return None
    return LauncherForbidden(
        f"the Kubernetes API refused the launcher: {message}; the launcher's service account "
        f"needs the Role of {RBAC_FILE} (kubectl apply -f {RBAC_FILE})"
    )


class KubernetesRuns:
    def __init__(
        self, *, conn_id: str, namespace: str, retrying: tenacity.Retrying | None = None
    ) -> None:
        self.hook = KubernetesHook(conn_id=conn_id)
        self.namespace = namespace
        self.retrying = retrying or api_retrying()

    @property
    def api(self) -> CoreV1Api:
        return self.hook.core_v1_client

    @property
    def networking(self) -> NetworkingV1Api:
        return NetworkingV1Api(api_client=self.hook.api_client)

    def call(self, function: Callable[..., Any], **kwargs: Any) -> Any:
        """``function`` tried again on transient errors; a refusal for want of a permission
        is ``LauncherForbidden``, naming the permission."""
        try:
            return self.retrying.copy()(function, **kwargs)
        except ApiException as error:
            refused = forbidden(error) if error.status == HTTP_FORBIDDEN else None
            if refused is not None:
                raise refused from None
            raise

    @staticmethod
    def plain(obj: Any) -> dict[str, Any]:
        """A client object as the API shows it (camelCase dict)."""
        return dict(ApiClient().sanitize_for_serialization(obj))

    def ensure_service(self, body: dict[str, Any]) -> None:
        """Create the Service unless it exists (a retried task creates it once)."""
        self._ensure(self.api.create_namespaced_service, body)

    def delete_service(self, name: str) -> bool:
        """Delete the Service; False if it was already gone."""
        return self._delete(self.api.delete_namespaced_service, name)

    def ensure_secret(self, body: dict[str, Any]) -> None:
        """Create the Secret unless it exists (a retried task creates it once)."""
        self._ensure(self.api.create_namespaced_secret, body)

    def delete_secret(self, name: str) -> bool:
        """Delete the Secret; False if it was already gone."""
        return self._delete(self.api.delete_namespaced_secret, name)

    def ensure_network_policy(self, body: dict[str, Any]) -> None:
        """Create the NetworkPolicy unless it exists (a retried task creates it once)."""
        self._ensure(self.networking.create_namespaced_network_policy, body)

    def delete_network_policy(self, name: str) -> bool:
        """Delete the NetworkPolicy; False if it was already gone."""
        return self._delete(self.networking.delete_namespaced_network_policy, name)

    def ensure_pod_group(self, body: dict[str, Any]) -> None:
        """Create the Volcano PodGroup unless it exists (a retried task creates it once)."""
        self._ensure(self._create_pod_group, body)

    def delete_pod_group(self, name: str) -> bool:
        """Delete the Volcano PodGroup; False if it was already gone."""
        return self._delete(self._delete_pod_group, name)

    def delete_workload(self, name: str) -> bool:
        """Delete the run's Kueue Workload (Kueue then lets go of its pods); False if gone."""
        return self._delete(self._delete_workload, name)

    def _delete_workload(self, *, name: str, namespace: str) -> Any:
        return CustomObjectsApi(self.hook.api_client).delete_namespaced_custom_object(
            KUEUE_API_GROUP, KUEUE_VERSION, namespace, "workloads", name
        )

    def _create_pod_group(self, *, namespace: str, body: dict[str, Any]) -> Any:
        return CustomObjectsApi(self.hook.api_client).create_namespaced_custom_object(
            VOLCANO_API_GROUP, VOLCANO_VERSION, namespace, "podgroups", body
        )

    def _delete_pod_group(self, *, name: str, namespace: str) -> Any:
        return CustomObjectsApi(self.hook.api_client).delete_namespaced_custom_object(
            VOLCANO_API_GROUP, VOLCANO_VERSION, namespace, "podgroups", name
        )

    def pods(self, labels: dict[str, str]) -> list[dict[str, Any]]:
        selector = ",".join(f"{key}={value}" for key, value in labels.items())
        found = self.call(
            self.api.list_namespaced_pod, namespace=self.namespace, label_selector=selector
        )
        return [self.plain(pod) for pod in found.items]

    def events(self, pod_name: str) -> list[dict[str, Any]]:
        found = self.call(
            self.api.list_namespaced_event,
            namespace=self.namespace,
            field_selector=f"involvedObject.name={pod_name}",
        )
        return [self.plain(event) for event in found.items]

    def delete_pod(self, name: str, *, grace_seconds: int) -> None:
        self._delete(
            self.api.delete_namespaced_pod,
            name,
            body=V1DeleteOptions(grace_period_seconds=grace_seconds),
        )

    def _ensure(self, create: Callable[..., Any], body: dict[str, Any]) -> None:
        """A create whose 409 means done: an earlier try, or a retry whose first answer was
        lost, made it."""
        try:
            self.call(create, namespace=self.namespace, body=body)
        except ApiException as error:
            if error.status != HTTP_CONFLICT:
                raise

    def _delete(self, delete: Callable[..., Any], name: str, **kwargs: Any) -> bool:
        """A delete whose 404 means done; False then."""
        try:
            self.call(delete, name=name, namespace=self.namespace, **kwargs)
        except ApiException as error:
            if error.status == HTTP_NOT_FOUND:
                return False
            raise
        return True
