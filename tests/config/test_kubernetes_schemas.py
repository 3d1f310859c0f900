"""The Kubernetes objects shipped in config/ are valid for the oldest Kubernetes the docs
support (1.29), checked strictly against its own OpenAPI schemas (an unknown or misspelt field
is an error): the RBAC manifest, the priority classes, the objects in the Helm values that are
Kubernetes' own (the chart itself cannot be rendered here: no helm, no network), and what
config/kubernetes.toml and config/mount_volumes.toml put into pods."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from octotrain.kubernetes_config import kubernetes_config
from octotrain.mount_volumes import kubernetes_mounts, mount_volumes
from octotrain.settings import REPO_ROOT
from tests.k8s_schemas import fragment_causes, schema_causes

CONFIG = REPO_ROOT / "config"
MANIFESTS = [CONFIG / "kubernetes" / "rbac.yaml", CONFIG / "kubernetes" / "rbac-kueue.yaml",
             CONFIG / "kubernetes" / "rbac-volcano.yaml",
             CONFIG / "helm" / "priority-classes.yaml"]  # fmt: skip


def _documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def _as(kind: str, fragment: dict[str, Any]) -> list[dict[str, str]]:
    return fragment_causes(kind, "v1", fragment)


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda path: path.name)
def test_every_manifest_is_valid_for_kubernetes_1_29(path: Path) -> None:
    documents = _documents(path)
    assert documents
    for document in documents:
        assert schema_causes(document) == [], (path.name, document["metadata"]["name"])


def test_the_helm_values_kubernetes_objects_are_valid() -> None:
    values = yaml.safe_load((CONFIG / "helm" / "values.yaml").read_text(encoding="utf-8"))
    for variable in values["env"]:
        assert _as("EnvVar", variable) == [], variable["name"]
    for source in yaml.safe_load(values["extraEnvFrom"]):
        assert _as("EnvFromSource", source) == [], source


def test_what_the_kubernetes_config_puts_into_pods_is_valid() -> None:
    config = kubernetes_config(CONFIG / "kubernetes.toml")
    for name, scheduling in config.resource_specs.items():
        for toleration in scheduling.tolerations:
            assert _as("Toleration", toleration) == [], name
    for name in mount_volumes():
        volume, mounts = kubernetes_mounts(name, [("data", "datasets/x/v1")], "/mnt/mounts")
        assert _as("Volume", volume) == [], name
        for mount in mounts:
            assert _as("VolumeMount", mount) == [], name
