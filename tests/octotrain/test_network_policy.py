"""The NetworkPolicy of a run: its pods reach each other on every port and the cluster DNS,
the configured egress and nothing more; nothing else gets in; valid for Kubernetes 1.29."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from octotrain.kubernetes_config import KubernetesConfig, kubernetes_config
from octotrain.network_policy import CLUSTER_DNS, run_network_policy
from octotrain.planning import RunPlan
from octotrain.pods import LABEL_RUN, run_label, service_name
from octotrain.settings import REPO_ROOT
from tests.k8s_schemas import schema_causes


def _plan(run_key: str) -> RunPlan:
    return RunPlan.model_construct(task_id=7, run_key=run_key, run_id=f"manual__{run_key}")


def _policy(config: KubernetesConfig, run_key: str = "r1") -> dict[str, Any]:
    return run_network_policy(_plan(run_key), "octotrain", config)


def test_a_run_s_pods_accept_only_each_other_and_reach_dns_and_the_configured_egress() -> None:
    shipped = kubernetes_config(Path(REPO_ROOT / "config" / "kubernetes.toml"))
    plan = _plan("r1")
    policy = _policy(shipped)
    own = {"podSelector": {"matchLabels": {LABEL_RUN: run_label(plan)}}}
    spec = policy["spec"]
    assert policy["metadata"]["name"] == service_name(plan)
    assert spec["podSelector"] == own["podSelector"]
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["ingress"] == [{"from": [own]}]  # no one else: not another run's pods
    assert spec["egress"][:2] == [
        {"to": [own]},
        {"to": [CLUSTER_DNS], "ports": [{"protocol": "UDP", "port": 53},
                                        {"protocol": "TCP", "port": 53}]},
    ]  # fmt: skip
    [https] = spec["egress"][2:]
    [block] = https["to"]
    assert block["ipBlock"]["cidr"] == "0.0.0.0/0"
    assert "10.0.0.0/8" in block["ipBlock"]["except"]  # not the cluster's API nor its pods
    assert https["ports"] == [{"protocol": "TCP", "port": 443}]
    assert schema_causes(policy) == []
    other = _policy(shipped, "r2")["spec"]["podSelector"]
    assert other != spec["podSelector"]  # each run fenced on its own


def test_egress_rules_by_namespace_and_family_and_to_anywhere() -> None:
    config = KubernetesConfig.model_validate(
        {"egress": [
            {"namespaces": ["minio"], "ports": [{"port": 9000}]},
            {"cidrs": ["0.0.0.0/0", "::/0"], "except_cidrs": ["10.0.0.0/8", "fd00::/8"]},
            {},
        ]}
    )  # fmt: skip
    egress = _policy(config)["spec"]["egress"][2:]
    assert egress[0] == {
        "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "minio"}}}],
        "ports": [{"protocol": "TCP", "port": 9000}],
    }
    assert egress[1]["to"] == [  # an exception goes with the block of its own family
        {"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"]}},
        {"ipBlock": {"cidr": "::/0", "except": ["fd00::/8"]}},
    ]
    assert egress[2] == {}  # anywhere, any port
    assert schema_causes(_policy(config)) == []
