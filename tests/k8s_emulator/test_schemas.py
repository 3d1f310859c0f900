"""The emulator checks what clients create and patch against Kubernetes 1.29's own OpenAPI
schemas, strictly, and answers the API server's 422 ``Invalid`` naming each field; it serves
NetworkPolicies (networking.k8s.io/v1)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from tests.k8s_emulator import KubernetesEmulator
from tests.k8s_emulator.pod_security import RESTRICTED_CONTAINER_CONTEXT, RESTRICTED_POD_CONTEXT
from tests.k8s_emulator.schemas import schema_causes

NAMESPACE = "default"


@pytest.fixture
def api(k8s_emulator: KubernetesEmulator, tmp_path: Path) -> Iterator[client.ApiClient]:
    kubeconfig = k8s_emulator.write_kubeconfig(tmp_path / "kubeconfig")
    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    yield api_client
    api_client.close()


def _pod(**container: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "typo"},
        "spec": {
            "securityContext": RESTRICTED_POD_CONTEXT,
            "containers": [{"name": "base", "image": "does-not-exist:1",
                            "securityContext": RESTRICTED_CONTAINER_CONTEXT, **container}],
        },
    }  # fmt: skip


def _refusal(error: ApiException) -> dict[str, Any]:
    assert error.status == 422
    status = dict(json.loads(error.body))
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "Invalid", 422)
    return status


def test_an_unknown_or_mistyped_pod_field_is_refused_with_each_field_named(
    api: client.ApiClient,
) -> None:
    core = client.CoreV1Api(api)
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod(NAMESPACE, _pod(restartPolcy="Always", args="--lr=1"))
    status = _refusal(refused.value)
    assert status["details"]["kind"] == "Pod"
    assert status["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "field": "spec.containers[0].args",
         "message": "Invalid value: '--lr=1' is not of type 'array', 'null'"},
        {"reason": "FieldValueInvalid", "field": "spec.containers[0].restartPolcy",
         "message": 'unknown field "restartPolcy"'},
    ]  # fmt: skip
    assert status["message"].startswith('Pod "typo" is invalid: [spec.containers[0].args: ')
    assert not core.list_namespaced_pod(NAMESPACE).items


def test_a_patch_that_breaks_the_schema_is_refused_and_changes_nothing(
    api: client.ApiClient,
) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_service(
        NAMESPACE, {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}
    )
    with pytest.raises(ApiException) as refused:
        core.patch_namespaced_service("web", NAMESPACE, {"metadata": {"labelz": {"a": "b"}}})
    assert _refusal(refused.value)["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "field": "metadata.labelz",
         "message": 'unknown field "labelz"'},
    ]  # fmt: skip
    assert "labelz" not in core.read_namespaced_service("web", NAMESPACE).to_dict()["metadata"]


def test_network_policies_are_created_listed_and_deleted(
    api: client.ApiClient, k8s_emulator: KubernetesEmulator
) -> None:
    networking = client.NetworkingV1Api(api)
    policy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "run", "labels": {"app": "x"}},
        "spec": {"podSelector": {"matchLabels": {"run": "a"}}, "policyTypes": ["Ingress"]},
    }
    networking.create_namespaced_network_policy(NAMESPACE, policy)
    [listed] = networking.list_namespaced_network_policy(NAMESPACE, label_selector="app=x").items
    assert listed.spec.pod_selector.match_labels == {"run": "a"}
    assert k8s_emulator.network_policies(NAMESPACE)[0]["apiVersion"] == "networking.k8s.io/v1"
    networking.delete_namespaced_network_policy("run", NAMESPACE)
    assert not networking.list_namespaced_network_policy(NAMESPACE).items
    with pytest.raises(ApiException) as refused:
        networking.create_namespaced_network_policy(
            NAMESPACE, {**policy, "spec": {"podSelector": {}, "ingres": []}}
        )
    assert _refusal(refused.value)["details"]["causes"][0]["field"] == "spec.ingres"


def test_the_validators_stay_warm() -> None:
    """A check costs well under a millisecond once the kind's validator is built."""
    pod = _pod()
    schema_causes(pod)
    started = time.perf_counter()
    for _ in range(100):
        assert schema_causes(pod) == []
    assert (time.perf_counter() - started) / 100 < 0.005
