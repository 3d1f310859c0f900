"""The door to the cluster for what a run does beside its pods' own lifecycle (which the
KubernetesPodOperator drives): the headless Service of a distributed run, the pods of a run
(to diagnose and delete them), and their events. Connects through Airflow's Kubernetes
connection (in-cluster, a kubeconfig path or a kubeconfig in the connection)."""

from __future__ import annotations

from typing import Any

from airflow.providers.cncf.kubernetes.hooks.kubernetes import KubernetesHook
from kubernetes.client import ApiClient, CoreV1Api, V1DeleteOptions
from kubernetes.client.rest import ApiException

HTTP_CONFLICT = 409
HTTP_NOT_FOUND = 404


class KubernetesRuns:
    def __init__(self, *, conn_id: str, namespace: str) -> None:
        self.hook = KubernetesHook(conn_id=conn_id)
        self.namespace = namespace

    @property
    def api(self) -> CoreV1Api:
        return self.hook.core_v1_client

    @staticmethod
    def plain(obj: Any) -> dict[str, Any]:
        """A client object as the API shows it (camelCase dict)."""
        return dict(ApiClient().sanitize_for_serialization(obj))

    def ensure_service(self, body: dict[str, Any]) -> None:
        """Create the Service unless it exists (a retried task creates it once)."""
        try:
            self.api.create_namespaced_service(namespace=self.namespace, body=body)
        except ApiException as error:
            if error.status != HTTP_CONFLICT:
                raise

    def delete_service(self, name: str) -> bool:
        """Delete the Service; False if it was already gone."""
        try:
            self.api.delete_namespaced_service(name=name, namespace=self.namespace)
        except ApiException as error:
            if error.status == HTTP_NOT_FOUND:
                return False
            raise
        return True

    def pods(self, labels: dict[str, str]) -> list[dict[str, Any]]:
        selector = ",".join(f"{key}={value}" for key, value in labels.items())
        found = self.api.list_namespaced_pod(namespace=self.namespace, label_selector=selector)
        return [self.plain(pod) for pod in found.items]

    def events(self, pod_name: str) -> list[dict[str, Any]]:
        found = self.api.list_namespaced_event(
            namespace=self.namespace, field_selector=f"involvedObject.name={pod_name}"
        )
        return [self.plain(event) for event in found.items]

    def delete_pod(self, name: str, *, grace_seconds: int) -> None:
        try:
            self.api.delete_namespaced_pod(
                name=name,
                namespace=self.namespace,
                body=V1DeleteOptions(grace_period_seconds=grace_seconds),
            )
        except ApiException as error:
            if error.status != HTTP_NOT_FOUND:
                raise
