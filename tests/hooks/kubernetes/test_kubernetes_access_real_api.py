"""The launcher's access check (``hooks.kubernetes.kubernetes_access``) against a real
kube-apiserver (``tests/k8s_control_plane.py``), through Airflow Kubernetes connections built from
kubeconfigs as a user's would be: the shipped Role passes; a Role without ``pods/log``, a
kubeconfig that is not there, a token the server does not accept and a server that does not
answer each fail in one sentence that names what is wrong, never a client's dump."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from hooks.kubernetes.kubernetes_access import (
    LauncherAccessError,
    check_kueue_queue,
    check_launcher_access,
)
from hooks.kubernetes.kubernetes_retry import api_retrying
from hooks.kubernetes.kubernetes_runs import KubernetesRuns
from hooks.local.local_process import free_port
from octotrain.launcher_permissions import LAUNCHER_PERMISSIONS
from tests.config.rbac import (
    KUEUE_RBAC_FILE,
    apply_shipped,
    bind_role_without,
    worker_account,
)
from tests.k8s_control_plane import ControlPlane, service_account_kubeconfig

NAMESPACE = "octotrain"
CONNECTION = "k8s_access_test"
NO_LOGS = "launcher-without-logs"


def _runs(kubeconfig: Path, monkeypatch: pytest.MonkeyPatch) -> KubernetesRuns:
    connection = {"conn_type": "kubernetes", "extra": {"kube_config_path": str(kubeconfig)}}
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONNECTION.upper()}", json.dumps(connection))
    # One quick try: a server that does not answer is not waited for here.
    return KubernetesRuns(conn_id=CONNECTION, namespace=NAMESPACE,
                          retrying=api_retrying(attempts=1))  # fmt: skip


@pytest.fixture(scope="module")
def shipped(k8s_api: ControlPlane) -> dict[str, str]:
    """The shipped Namespace, Role and RoleBinding applied; the worker's account."""
    apply_shipped(k8s_api)
    return worker_account()


def test_the_shipped_role_passes(
    k8s_api: ControlPlane, shipped: dict[str, str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    kubeconfig = service_account_kubeconfig(
        k8s_api, tmp_path / "worker", account_namespace=shipped["namespace"],
        account=shipped["name"], namespace=NAMESPACE,
    )  # fmt: skip
    check_launcher_access(_runs(kubeconfig, monkeypatch), conn_id=CONNECTION)


def test_a_role_without_pods_log_names_the_user_and_the_permission(
    k8s_api: ControlPlane, shipped: dict[str, str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    bind_role_without(k8s_api, NO_LOGS, "pods/log")
    kubeconfig = service_account_kubeconfig(
        k8s_api, tmp_path / "no-logs", account_namespace=NAMESPACE, account=NO_LOGS,
        namespace=NAMESPACE,
    )  # fmt: skip
    with pytest.raises(LauncherAccessError) as refused:
        check_launcher_access(_runs(kubeconfig, monkeypatch), conn_id=CONNECTION)
    assert str(refused.value) == (
        f'the launcher\'s Kubernetes user "system:serviceaccount:{NAMESPACE}:{NO_LOGS}" '
        f"(connection '{CONNECTION}') may not get pods/log in the namespace {NAMESPACE}; grant "
        "it the Role of config/kubernetes/rbac.yaml (kubectl apply -f "
        "config/kubernetes/rbac.yaml)"
    )


def test_an_account_with_no_role_is_told_every_permission(
    k8s_api: ControlPlane, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubeconfig = service_account_kubeconfig(
        k8s_api, tmp_path / "nobody", account_namespace="default", account="nobody",
        namespace=NAMESPACE,
    )  # fmt: skip
    with pytest.raises(LauncherAccessError) as refused:
        check_launcher_access(_runs(kubeconfig, monkeypatch), conn_id=CONNECTION)
    listed = str(refused.value).split(" may not ")[1].split(" in the namespace ")[0]
    assert listed.split(", ") == [str(permission) for permission in LAUNCHER_PERMISSIONS]
    assert "create networkpolicies (networking.k8s.io)" in listed


def test_a_kubeconfig_that_is_not_there_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(LauncherAccessError) as refused:
        check_launcher_access(_runs(tmp_path / "missing", monkeypatch), conn_id=CONNECTION)
    assert str(refused.value) == (
        f"the Kubernetes connection '{CONNECTION}' cannot be used: Invalid kube-config file. "
        "No configuration found."
    )


def test_a_token_the_server_does_not_accept_is_a_401_in_words(
    k8s_api: ControlPlane, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubeconfig = tmp_path / "wrong-token"
    _write_kubeconfig(kubeconfig, k8s_api.url, k8s_api.ca, token="not-a-token")
    with pytest.raises(LauncherAccessError) as refused:
        check_launcher_access(_runs(kubeconfig, monkeypatch), conn_id=CONNECTION)
    assert str(refused.value) == (
        f"the Kubernetes API at {k8s_api.url} refused the credentials of the connection "
        f"'{CONNECTION}' (401 Unauthorized): its kubeconfig's token or client certificate is "
        "wrong or has expired"
    )


def test_a_server_that_does_not_answer_is_named(
    k8s_api: ControlPlane, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubeconfig, url = tmp_path / "nowhere", f"https://127.0.0.1:{free_port()}"
    _write_kubeconfig(kubeconfig, url, k8s_api.ca, token="any")
    with pytest.raises(LauncherAccessError) as refused:
        check_launcher_access(_runs(kubeconfig, monkeypatch), conn_id=CONNECTION)
    message = str(refused.value)
    assert message.startswith(
        f"the Kubernetes API at {url} (connection '{CONNECTION}') cannot be reached: "
    )
    assert "Connection refused" in message and "Traceback" not in message


def _write_kubeconfig(path: Path, url: str, ca: Path, *, token: str) -> None:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "test",
                      "cluster": {"server": url, "certificate-authority": str(ca)}}],
        "users": [{"name": "test", "user": {"token": token}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
    }))  # fmt: skip


def test_kueue_asked_for_but_not_installed_is_named(
    k8s_api: ControlPlane, shipped: dict[str, str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The plane without Kueue's CRDs (``tests/k8s_kueue.py`` removes them when it stops), the
    worker allowed to read LocalQueues (``rbac-kueue.yaml``)."""
    apply_shipped(k8s_api, KUEUE_RBAC_FILE)
    kubeconfig = service_account_kubeconfig(
        k8s_api, tmp_path / "worker", account_namespace=shipped["namespace"],
        account=shipped["name"], namespace=NAMESPACE,
    )  # fmt: skip
    with pytest.raises(LauncherAccessError) as refused:
        check_kueue_queue(_runs(kubeconfig, monkeypatch), queue="demo", project="demo", asked={})
    assert str(refused.value) == (
        "Kueue is not installed in the cluster (it has no LocalQueue kind: the CRD "
        "localqueues.kueue.x-k8s.io is missing), but config/kubernetes.toml says admission = "
        '"kueue"; install Kueue, or set admission = "" there'
    )
