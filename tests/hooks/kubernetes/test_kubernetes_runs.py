"""``KubernetesRuns`` against the tests' real kube-apiserver, behind a proxy that fails
requests on cue (``tests/k8s_fault_proxy.py``): the run's Service and NetworkPolicy are created
once and deleted once, and every call is tried again after a transient failure (429 with
``Retry-After``, 5xx, a broken connection) but not after an answer that will not change (a 422
for an object the server refuses)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import tenacity
from kubernetes.client.rest import ApiException
from urllib3.exceptions import ProtocolError

from hooks.kubernetes.kubernetes_retry import RetryAfterOrExponential, api_retrying, is_transient
from hooks.kubernetes.kubernetes_runs import KubernetesRuns
from tests.k8s_control_plane import ControlPlane, create
from tests.k8s_fault_proxy import FaultProxy

NAMESPACE = "octotrain-retries"
CONN_ID = "octotrain_runs_test"
SERVICE = {"metadata": {"name": "run-a"}, "spec": {"clusterIP": "None", "ports": [{"port": 1}]}}
SERVICES = f"/api/v1/namespaces/{NAMESPACE}/services"
POLICIES = f"/apis/networking.k8s.io/v1/namespaces/{NAMESPACE}/networkpolicies"
POLICY = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
          "metadata": {"name": "run-a"},
          "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}  # fmt: skip


@pytest.fixture
def proxy(k8s_api: ControlPlane) -> Iterator[FaultProxy]:
    """The proxy in front of the apiserver, with the test's namespace; the objects a test made
    there are deleted after it."""
    create(k8s_api, "/api/v1/namespaces",
           {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})  # fmt: skip
    with FaultProxy(k8s_api) as proxy:
        yield proxy
    with k8s_api.client() as api:
        for path in (f"{SERVICES}/run-a", f"{POLICIES}/run-a"):
            api.delete(path)


@pytest.fixture
def runs(
    proxy: FaultProxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[KubernetesRuns]:
    """The proxy as a Kubernetes connection, retried without waiting."""
    kubeconfig = proxy.write_kubeconfig(tmp_path / "kubeconfig", namespace=NAMESPACE)
    connection = {"conn_type": "kubernetes", "extra": {"kube_config_path": str(kubeconfig)}}
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps(connection))
    yield KubernetesRuns(
        conn_id=CONN_ID, namespace=NAMESPACE, retrying=api_retrying(wait_min=0, wait_max=0)
    )


def _names(proxy: FaultProxy, path: str) -> list[str]:
    with proxy.plane.client() as api:
        return [item["metadata"]["name"] for item in api.get(path).json()["items"]]


def test_the_run_s_objects_are_made_once_and_deleted_once(
    runs: KubernetesRuns, proxy: FaultProxy
) -> None:
    for _ in range(2):  # a retried stage_data task
        runs.ensure_service(SERVICE)
        runs.ensure_network_policy(POLICY)
    assert _names(proxy, SERVICES) == ["run-a"]
    assert _names(proxy, POLICIES) == ["run-a"]
    assert runs.delete_network_policy("run-a") and runs.delete_service("run-a")
    assert not runs.delete_network_policy("run-a") and not runs.delete_service("run-a")


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_a_transient_failure_is_tried_again(
    runs: KubernetesRuns, proxy: FaultProxy, status: int
) -> None:
    proxy.fail_next("POST", POLICIES, status=status, times=2)
    runs.ensure_network_policy(POLICY)
    assert proxy.calls("POST", POLICIES) == 3
    assert _names(proxy, POLICIES) == ["run-a"]
    pods = f"/api/v1/namespaces/{NAMESPACE}/pods"
    proxy.fail_next("GET", pods, status=status)
    assert runs.pods({"octotrain.io/run": "x"}) == []
    assert proxy.calls("GET", pods) == 2


def test_a_refusal_is_not_tried_again(runs: KubernetesRuns, proxy: FaultProxy) -> None:
    bad = {**POLICY, "spec": {"podSelector": {}, "policyTypes": ["Sideways"]}}
    with pytest.raises(ApiException) as refused:
        runs.ensure_network_policy(bad)
    assert refused.value.status == 422  # the apiserver's Invalid
    assert proxy.calls("POST", "/apis/networking.k8s.io/") == 1


def test_it_gives_up_after_its_attempts(runs: KubernetesRuns, proxy: FaultProxy) -> None:
    proxy.fail_next("DELETE", SERVICES, status=503, times=10)
    with pytest.raises(ApiException) as failed:
        runs.delete_service("run-a")
    assert failed.value.status == 503
    assert proxy.calls("DELETE", SERVICES) == 5


def test_what_counts_as_transient_and_how_long_to_wait() -> None:
    assert is_transient(ProtocolError("connection reset"))
    assert is_transient(ApiException(status=503))
    assert not is_transient(ApiException(status=422))
    assert not is_transient(ApiException(status=409))  # read as "already there"
    assert not is_transient(ValueError("a bug"))
    wait = RetryAfterOrExponential(minimum=1, maximum=15)
    busy = ApiException(status=429)
    busy.headers = {"Retry-After": "7"}
    assert wait(_state(busy, attempt=1)) == 7  # the server's word
    assert wait(_state(ApiException(status=503), attempt=3)) == 4  # 2^(3-1)
    busy.headers = {"Retry-After": "3600"}
    assert wait(_state(busy, attempt=1)) == 15  # never longer than the maximum


def _state(error: BaseException, *, attempt: int) -> tenacity.RetryCallState:
    state = tenacity.RetryCallState(api_retrying(), fn=None, args=(), kwargs={})
    state.attempt_number = attempt
    state.set_exception((type(error), error, None))
    return state
