"""The NetworkPolicy of a run: trainings run users' code, so a run's pods accept connections
only from the pods of the same run, and connect only to those, to the cluster DNS (node N is
found by its DNS name) and to what ``egress`` in ``config/kubernetes.toml`` allows (the object
store, which the init and sidecar containers use). Another run's pods, other projects' and the
cluster's API are out of reach.

Between the run's own pods every port is open, not only the rendezvous port: after the
rendezvous, NCCL and Gloo connect the nodes on ports they pick themselves."""

from __future__ import annotations

from ipaddress import IPv4Network, IPv6Network
from typing import Any

from octotrain.kubernetes_config import EgressRule, KubernetesConfig
from octotrain.planning import RunPlan
from octotrain.pods import LABEL_RUN, LABEL_TASK, run_label, service_name

# The cluster DNS (CoreDNS and kube-dns carry this label), in whichever namespace it runs.
CLUSTER_DNS = {"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def network_policy_name(plan: RunPlan) -> str:
    """The run's NetworkPolicy is named as its Service (one DNS label per run)."""
    return service_name(plan)


def run_network_policy(plan: RunPlan, namespace: str, config: KubernetesConfig) -> dict[str, Any]:
    """The NetworkPolicy that fences in the pods of ``plan``'s run."""
    own_pods = {"podSelector": {"matchLabels": {LABEL_RUN: run_label(plan)}}}
    dns_ports = [{"protocol": protocol, "port": 53} for protocol in ("UDP", "TCP")]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": network_policy_name(plan),
            "namespace": namespace,
            "labels": {LABEL_TASK: str(plan.task_id), LABEL_RUN: run_label(plan)},
        },
        "spec": {
            **own_pods,
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [own_pods]}],
            "egress": [
                {"to": [own_pods]},
                {"to": [CLUSTER_DNS], "ports": dns_ports},
                *(_egress_rule(rule) for rule in config.egress),
            ],
        },
    }


def _egress_rule(rule: EgressRule) -> dict[str, Any]:
    peers: list[dict[str, Any]] = [
        {"ipBlock": {"cidr": str(cidr)} | _except(rule, cidr)} for cidr in rule.cidrs
    ]
    peers += [
        {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: name}}}
        for name in rule.namespaces
    ]
    ports = [{"protocol": port.protocol, "port": port.port} for port in rule.ports]
    return ({"to": peers} if peers else {}) | ({"ports": ports} if ports else {})


def _except(rule: EgressRule, cidr: IPv4Network | IPv6Network) -> dict[str, Any]:
    """The exceptions that lie inside ``cidr`` (an ipBlock refuses any other)."""
    inside = [
        str(item)
        for item in rule.except_cidrs
        if item.version == cidr.version and item.subnet_of(cidr)
    ]
    return {"except": inside} if inside else {}
