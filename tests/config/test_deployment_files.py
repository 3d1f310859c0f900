"""The Kubernetes deployment files agree with each other and with Octotrain's settings: the
launcher's RBAC (config/kubernetes/rbac.yaml; that it allows exactly the calls of real runs is
tests/e2e/test_kubernetes_run.py's check), the values for Airflow's official Helm chart
(config/helm/values.yaml), and the PriorityClasses that training pods name."""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from octotrain.kubernetes_config import kubernetes_config
from octotrain.settings import DEFAULTS_FILE, REPO_ROOT, load_settings
from tests.config.rbac import Access, allows, documents, grants, launcher_role, request_access

VALUES_FILE = REPO_ROOT / "config" / "helm" / "values.yaml"
PRIORITY_CLASSES_FILE = REPO_ROOT / "config" / "helm" / "priority-classes.yaml"
# docs/how-to/deploy-helm.md installs the chart with `-n airflow`: the worker's
# ServiceAccount lives there.
RELEASE_NAMESPACE = "airflow"
FAB = "airflow.providers.fab.auth_manager.fab_auth_manager.FabAuthManager"
# Top-level keys of the official chart's values (apache/airflow chart/values.yaml, chart 1.21
# and later; not available offline) with their types: Helm ignores a key the chart does not
# know, so a misspelt or misplaced one would silently do nothing.
CHART_KEYS: dict[str, type] = {
    "airflowVersion": str, "defaultAirflowRepository": str, "defaultAirflowTag": str,
    "executor": str, "images": dict, "dags": dict, "env": list, "secret": list,
    "extraEnv": str, "extraEnvFrom": str, "extraSecrets": dict, "extraConfigMaps": dict,
    "fernetKey": str, "fernetKeySecretName": str, "jwtSecret": str, "jwtSecretName": str,
    "apiSecretKey": str, "apiSecretKeySecretName": str, "data": dict, "postgresql": dict,
    "redis": dict, "pgbouncer": dict, "config": dict, "createUserJob": dict,
    "migrateDatabaseJob": dict, "workers": dict, "scheduler": dict, "apiServer": dict,
    "triggerer": dict, "dagProcessor": dict, "allowPodLaunching": bool, "rbac": dict,
    "logs": dict, "ingress": dict, "uid": int, "gid": int,
}  # fmt: skip


@pytest.fixture(scope="module")
def values() -> dict[str, Any]:
    return yaml.safe_load(VALUES_FILE.read_text(encoding="utf-8"))


def env_of(values: dict[str, Any]) -> dict[str, str]:
    return {item["name"]: item["value"] for item in values["env"]}


def test_the_rbac_file_binds_the_launcher_role_in_the_training_namespace_to_the_workers(
    values: dict[str, Any],
) -> None:
    """To the Celery workers (they create the pods) and to the triggerer (it follows them
    while their launch tasks are deferred, and deletes them on a stop)."""
    namespace, role, binding = documents()
    assert [doc["kind"] for doc in (namespace, role, binding)] == [
        "Namespace",
        "Role",
        "RoleBinding",
    ]
    training = namespace["metadata"]["name"]
    # The namespace of the pods: the settings' default and what the Helm values set.
    assert training == load_settings({}).kubernetes_namespace
    assert training == env_of(values)["OCTOTRAIN_KUBERNETES_NAMESPACE"]
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == training
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role["metadata"]["name"]
    }  # fmt: skip
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": values[component]["serviceAccount"]["name"],
         "namespace": RELEASE_NAMESPACE}
        for component in ("workers", "triggerer")
    ]  # fmt: skip
    assert values["triggerer"].get("enabled", True)  # the chart's default: a triggerer runs
    # Core resources and the runs' NetworkPolicies only, each named: no wildcard grants more
    # than the launcher's calls.
    assert {group for group, _, _ in grants(role)} == {"", "networking.k8s.io"}
    assert not [rule for rule in role["rules"] if "*" in json.dumps(rule)]


@pytest.mark.parametrize(
    ("method", "path", "access"),
    [
        ("POST", "/api/v1/namespaces/octotrain/pods", Access("create", "pods", "octotrain")),
        ("GET", "/api/v1/namespaces/octotrain/pods?labelSelector=a%3Db",
         Access("list", "pods", "octotrain")),
        ("GET", "/api/v1/namespaces/octotrain/pods?watch=true",
         Access("watch", "pods", "octotrain")),
        # kubernetes_asyncio (the provider's trigger) writes Python's True; the API server
        # reads any value but "", "0" and "false" as true.
        ("GET", "/api/v1/namespaces/octotrain/events?fieldSelector=x&watch=True",
         Access("watch", "events", "octotrain")),
        ("GET", "/api/v1/namespaces/octotrain/events?watch=False",
         Access("list", "events", "octotrain")),
        ("GET", "/api/v1/namespaces/octotrain/events?watch=0",
         Access("list", "events", "octotrain")),
        ("GET", "/api/v1/namespaces/octotrain/pods/p1", Access("get", "pods", "octotrain")),
        ("GET", "/api/v1/namespaces/octotrain/pods/p1/log?follow=true",
         Access("get", "pods/log", "octotrain")),
        ("POST", "/api/v1/namespaces/octotrain/pods/p1/exec",
         Access("create", "pods/exec", "octotrain")),
        ("PATCH", "/api/v1/namespaces/octotrain/pods/p1", Access("patch", "pods", "octotrain")),
        ("PUT", "/api/v1/namespaces/octotrain/pods/p1", Access("update", "pods", "octotrain")),
        ("DELETE", "/api/v1/namespaces/octotrain/pods/p1", Access("delete", "pods", "octotrain")),
        ("DELETE", "/api/v1/namespaces/octotrain/pods",
         Access("deletecollection", "pods", "octotrain")),
        ("GET", "/api/v1/pods", Access("list", "pods", None)),
        ("GET", "/api/v1/namespaces/octotrain", Access("get", "namespaces", "octotrain")),
        ("GET", "/apis/batch/v1/namespaces/octotrain/jobs",
         Access("list", "jobs", "octotrain", "batch")),
        ("GET", "/api/v1", None),
        ("GET", "/version", None),
    ],
)  # fmt: skip
def test_a_request_s_rbac_attributes_are_read_as_the_api_server_reads_them(
    method: str, path: str, access: Access | None
) -> None:
    assert request_access(method, path) == access


def test_the_role_allows_only_its_rules_in_its_own_namespace() -> None:
    role = launcher_role()
    assert allows(role, Access("get", "pods/log", "octotrain"))
    assert not allows(role, Access("get", "pods/log", "default"))  # another namespace
    assert not allows(role, Access("list", "pods", None))  # all namespaces
    assert not allows(role, Access("create", "pods/exec", "octotrain"))
    assert not allows(role, Access("get", "secrets", "octotrain"))


def test_the_helm_values_use_the_chart_s_keys_in_its_shapes(values: dict[str, Any]) -> None:
    assert set(values) <= set(CHART_KEYS), sorted(set(values) - set(CHART_KEYS))
    for key, value in values.items():
        assert isinstance(value, CHART_KEYS[key]), key
    assert values["executor"] == "CeleryExecutor"
    image = values["images"]["airflow"]
    assert isinstance(image["repository"], str) and isinstance(image["tag"], str)
    assert all(set(item) == {"name", "value"} and isinstance(item["value"], str)
               for item in values["env"])  # fmt: skip
    # extraEnvFrom is a (templated) string holding a list of envFrom sources.
    [source] = yaml.safe_load(values["extraEnvFrom"])
    assert set(source) == {"secretRef"} and source["secretRef"]["name"]
    for key in ("fernetKeySecretName", "jwtSecretName", "apiSecretKeySecretName"):
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", values[key]), key
    assert values["data"]["metadataSecretName"]
    assert not {"fernetKey", "jwtSecret", "apiSecretKey"} & set(values)  # never in the file
    assert values["dags"] == {"persistence": {"enabled": False}, "gitSync": {"enabled": False}}
    assert values["config"]["core"]["dags_folder"] == "/opt/octotrain/dags"


def test_the_helm_values_configure_octotrain_with_real_settings(values: dict[str, Any]) -> None:
    known = {"OCTOTRAIN_" + key.upper() for key in tomllib.loads(DEFAULTS_FILE.read_text())}
    named = set(re.findall(r"OCTOTRAIN_[A-Z0-9_]+", VALUES_FILE.read_text()))
    assert named <= known, sorted(named - known)
    env = env_of(values)
    # The settings the workers get (the Secret adds the catalog URL and the store connection).
    settings = load_settings({key: value for key, value in env.items() if key in known})
    assert settings.launcher == "kubernetes"
    image = values["images"]["airflow"]
    assert settings.octotrain_image == f"{image['repository']}:{image['tag']}"  # one image
    assert json.loads(env["AIRFLOW_CONN_KUBERNETES_DEFAULT"]) == {
        "conn_type": "kubernetes", "extra": {"in_cluster": True}
    }  # fmt: skip
    # Task logs go to the object store's bucket, through its connection.
    store = urlsplit(settings.object_store_url)
    logging = values["config"]["logging"]
    assert logging["remote_logging"] == "True"
    assert urlsplit(logging["remote_base_log_folder"]).netloc == store.netloc
    assert logging["remote_log_conn_id"] == parse_qs(store.query)["conn_id"][0]
    assert values["config"]["core"]["auth_manager"] == FAB


def test_the_helm_install_migrates_the_catalog_and_creates_an_admin_without_a_password_in_git(
    values: dict[str, Any],
) -> None:
    migrate = values["migrateDatabaseJob"]
    assert migrate["args"][:2] == ["bash", "-c"]
    assert [step.strip() for step in migrate["args"][2].split("&&")] == [
        "airflow db migrate", "exec octotrain init"
    ]  # fmt: skip
    assert migrate["applyCustomEnv"] is True  # the catalog URL comes from extraEnvFrom
    user = values["createUserJob"]["defaultUser"]
    assert user["enabled"] is True and user["role"] == "Admin"
    assert user["password"] == ""  # given with --set-string at install (docs/how-to/deploy-helm.md)
    assert values["allowPodLaunching"] is False  # pods go to the training namespace only


def test_the_priority_classes_are_those_the_pods_name_in_priority_order() -> None:
    classes = {doc["metadata"]["name"]: doc for doc in yaml.safe_load_all(
        PRIORITY_CLASSES_FILE.read_text(encoding="utf-8")) if doc}  # fmt: skip
    configured = kubernetes_config(REPO_ROOT / "config" / "kubernetes.toml").priority_classes
    assert set(classes) == {entry.name for entry in configured}
    by_minimum = sorted(configured, key=lambda entry: entry.minimum)
    priorities = [classes[entry.name]["value"] for entry in by_minimum]
    assert priorities == sorted(set(priorities))  # a higher minimum, a strictly higher class
    for doc in classes.values():
        assert doc["kind"] == "PriorityClass" and doc["apiVersion"] == "scheduling.k8s.io/v1"
        assert doc["preemptionPolicy"] == "Never" and doc["globalDefault"] is False
