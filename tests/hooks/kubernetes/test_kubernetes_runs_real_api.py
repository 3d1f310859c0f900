"""``KubernetesRuns`` against a real kube-apiserver (``tests/k8s_control_plane.py``), through an
Airflow Kubernetes connection built from a kubeconfig for a service account, as a user's would
be: its calls work with the permissions they need, and a missing permission is an error that
names it (the API server's words), not the client's dump of the answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from hooks.kubernetes.kubernetes_runs import KubernetesRuns, LauncherForbidden
from tests.k8s_control_plane import ControlPlane

NAMESPACE = "octotrain-runs"
ACCOUNT = "launcher"
CONNECTION = "k8s_runs_test"


def _created(k8s_api: ControlPlane, path: str, body: dict[str, object]) -> None:
    with k8s_api.client() as api:
        answer = api.post(path, json=body)
    assert answer.status_code in (201, 409), answer.text


@pytest.fixture(scope="module")
def account_kubeconfig(k8s_api: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kubeconfig of the service account ``launcher`` of a namespace of its own, whose Role
    may get pods but not list them."""
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    _created(k8s_api, "/api/v1/namespaces", namespace)
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": ACCOUNT}}
    _created(k8s_api, f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts", account)
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NAMESPACE}"
    _created(k8s_api, f"{rbac}/roles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": ACCOUNT},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
                  {"apiGroups": [""], "resources": ["services"], "verbs": ["create", "delete"]}],
    })  # fmt: skip
    _created(k8s_api, f"{rbac}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": ACCOUNT},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ACCOUNT},
        "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE}],
    })  # fmt: skip
    with k8s_api.client() as api:
        answer = api.post(f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{ACCOUNT}/token",
                          json={"spec": {"expirationSeconds": 3600}})  # fmt: skip
    assert answer.status_code == 201, answer.text
    path = tmp_path_factory.mktemp("kubeconfig") / "launcher.kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "launcher",
        "clusters": [{"name": "test", "cluster": {"server": k8s_api.url,
                                                  "certificate-authority": str(k8s_api.ca)}}],
        "users": [{"name": ACCOUNT, "user": {"token": answer.json()["status"]["token"]}}],
        "contexts": [{"name": "launcher", "context": {"cluster": "test", "user": ACCOUNT}}],
    }))  # fmt: skip
    return path


@pytest.fixture
def runs(account_kubeconfig: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[KubernetesRuns]:
    connection = {"conn_type": "kubernetes", "extra": {"kube_config_path": str(account_kubeconfig)}}
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONNECTION.upper()}", json.dumps(connection))
    yield KubernetesRuns(conn_id=CONNECTION, namespace=NAMESPACE)


def test_a_permitted_call_goes_through_the_connection(runs: KubernetesRuns) -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "rendezvous"},
               "spec": {"clusterIP": "None", "ports": [{"port": 29500}]}}  # fmt: skip
    runs.ensure_service(service)
    runs.ensure_service(service)  # created once: the second sees it there
    assert runs.delete_service("rendezvous") is True
    assert runs.delete_service("rendezvous") is False


def test_a_missing_permission_is_an_error_naming_it(runs: KubernetesRuns) -> None:
    with pytest.raises(LauncherForbidden) as refused:
        runs.pods({"octotrain.io/run": "x"})
    message = str(refused.value)
    assert f'"system:serviceaccount:{NAMESPACE}:{ACCOUNT}" cannot list resource "pods"' in message
    assert "config/kubernetes/rbac.yaml" in message
    assert "HTTP response headers" not in message
