"""A run's secrets (variables and parameters whose names say so) never reach what Airflow
shows: ``validate`` pushes the plan masked (XCom) and keeps the real values in the catalog,
apart from the catalog's masked copy of the plan; the stages that start nodes get them back."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hooks.storage.catalog import CatalogHook, catalog_for
from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog.models import Run
from octotrain.run_lifecycle import record_triggered
from octotrain.secrets import held_apart
from operators.local.launch_local import LaunchLocalNodeOperator
from operators.validate import ValidateTaskOperator
from tests.factories import add_secretive_algorithm, add_task, seed


class _TaskInstance:
    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value

    def xcom_pull(self, *, task_ids: str, key: str) -> Any:
        return self.pushed[key]


def validated_secretive_task(
    catalog: CatalogHook,
    store: LocalFolderStore,
    conf: dict[str, Any],
    *,
    held: dict[str, Any] | None = None,
) -> tuple[int, Any]:
    """A task whose algorithm has a secret variable and a secret parameter, validated for a
    run with ``conf`` (and the secrets its trigger ``held`` apart in the queued run): its id
    and the run's context (the plan ``validate`` pushed in it)."""
    seed(catalog, store)
    add_secretive_algorithm(
        catalog,
        env={"HF_TOKEN": "hf_saved", "THREADS": "2"},
        parameters=[{"name": "api_key", "type": "string", "default": "k-1"},
                    {"name": "epochs", "type": "int", "default": 3}],
    )  # fmt: skip
    task = add_task(catalog, name="secretive", algorithm="with-secrets", parameters={},
                    node_count=1)  # fmt: skip
    if held is not None:
        with catalog.session() as session:
            record_triggered(session, task, "manual__s", triggered_by="alice", node_count=1,
                             secrets=held)  # fmt: skip
    ti = _TaskInstance()
    ti.map_index, ti.dag_id, ti.task_id, ti.try_number = 0, f"octotrain_task_{task}", "launch", 1
    dag_run = SimpleNamespace(run_id="manual__s", conf=conf, run_type="manual",
                              triggering_user_name="alice")  # fmt: skip
    context: Any = {"dag_run": dag_run, "ti": ti, "run_id": "manual__s", "dag": object()}
    ValidateTaskOperator(task_id="validate", training_task_id=task).execute(context)
    return task, context


def test_secrets_are_masked_in_xcom_and_the_catalog_and_given_to_the_nodes(
    catalog: CatalogHook, store: LocalFolderStore, octotrain_env: Path
) -> None:
    task, context = validated_secretive_task(catalog, store, {"env": {"HF_TOKEN": "hf_run"}})
    pushed = context["ti"].pushed["plan"]
    assert pushed["env"] == {"HF_TOKEN": "***", "THREADS": "2"}
    assert pushed["parameters"] == {"api_key": "***", "epochs": 3}
    with catalog_for(catalog.url).session() as session:
        run = session.get(Run, pushed["catalog_run_id"])
        assert run is not None and run.plan["env"]["HF_TOKEN"] == "***"
        assert run.secrets == {"env": {"HF_TOKEN": "hf_run"}, "parameters": {"api_key": "k-1"}}
    launch = LaunchLocalNodeOperator(task_id="launch", training_task_id=task, node_index="single-0")
    plan = launch.plan_to_start_nodes(context)
    assert plan.env == {"HF_TOKEN": "hf_run", "THREADS": "2"}
    assert list(plan.parameters.items()) == [("api_key", "k-1"), ("epochs", 3)]  # their order


def test_a_nodes_pod_reads_the_real_values_from_the_runs_secret_not_its_spec(
    catalog: CatalogHook, store: LocalFolderStore, octotrain_env: Path
) -> None:
    from kubernetes.client import ApiClient

    from octotrain.planning import RunPlan
    from octotrain.pods import run_secret, secret_name
    from operators.kubernetes.launch_pod import LaunchNodePodOperator
    from operators.training_stage import with_real_secrets

    task, context = validated_secretive_task(catalog, store, {})
    operator = LaunchNodePodOperator(task_id="launch", training_task_id=task, node_index="single-0")
    pod = ApiClient().sanitize_for_serialization(
        operator.build_pod_request_obj(context, dry_run=True)
    )
    assert "hf_saved" not in json.dumps(pod) and "k-1" not in json.dumps(pod)
    [base] = [c for c in pod["spec"]["containers"] if c["name"] == "base"]
    variables = {item["name"]: item for item in base["env"]}
    plan = RunPlan.model_validate(context["ti"].pushed["plan"])
    reference = {"secretKeyRef": {"name": secret_name(plan), "key": "env-0"}}
    assert variables["HF_TOKEN"] == {"name": "HF_TOKEN", "valueFrom": reference}
    assert variables["THREADS"] == {"name": "THREADS", "value": "2"}
    parameter = variables["OCTOTRAIN_SECRET_PARAMETER_0"]["valueFrom"]["secretKeyRef"]
    assert "--api_key=$(OCTOTRAIN_SECRET_PARAMETER_0)" in base["command"]
    secret = run_secret(with_real_secrets(plan), "octotrain")
    assert secret["stringData"] == {"env-0": "hf_saved", parameter["key"]: "k-1"}


def test_a_dollar_in_a_pods_arguments_is_passed_on_not_expanded() -> None:
    """Kubernetes expands ``$(X)`` in a container's command: a value's ``$`` is doubled."""
    from octotrain.pods import training_arguments

    plan = SimpleNamespace(parameters={"pattern": "$(HOME)", "token": "x"})
    assert training_arguments(plan) == [
        "--pattern=$$(HOME)",
        "--token=$(OCTOTRAIN_SECRET_PARAMETER_1)",
    ]  # type: ignore[arg-type]


def test_a_masked_secret_in_the_conf_means_the_saved_value(
    catalog: CatalogHook, store: LocalFolderStore, octotrain_env: Path
) -> None:
    """``***``, what the DAG's Params show for a secret, plans the run with the saved value."""
    task, context = validated_secretive_task(
        catalog, store, {"env": {"HF_TOKEN": "***"}, "api_key": "***"}
    )
    launch = LaunchLocalNodeOperator(task_id="launch", training_task_id=task, node_index="single-0")
    plan = launch.plan_to_start_nodes(context)
    assert (plan.env["HF_TOKEN"], plan.parameters["api_key"]) == ("hf_saved", "k-1")


def test_secrets_held_apart_by_the_trigger_reach_the_nodes_not_airflows_conf(
    catalog: CatalogHook, store: LocalFolderStore, octotrain_env: Path
) -> None:
    """A trigger keeps a new secret value in the catalog's queued run and sends Airflow ``***``;
    ``validate`` plans the run with the held value."""
    conf, held = held_apart({"env": {"HF_TOKEN": "hf_typed", "THREADS": "4"}, "api_key": "k-9"})
    assert conf == {"env": {"HF_TOKEN": "***", "THREADS": "4"}, "api_key": "***"}
    task, context = validated_secretive_task(catalog, store, conf, held=held)
    launch = LaunchLocalNodeOperator(task_id="launch", training_task_id=task, node_index="single-0")
    plan = launch.plan_to_start_nodes(context)
    assert (plan.env["HF_TOKEN"], plan.env["THREADS"], plan.parameters["api_key"]) == (
        "hf_typed",
        "4",
        "k-9",
    )
    with catalog_for(catalog.url).session() as session:
        run = session.get(Run, context["ti"].pushed["plan"]["catalog_run_id"])
        assert run is not None and "hf_typed" not in json.dumps(run.plan)


def test_a_local_node_s_quoted_train_log_has_its_secrets_masked(
    catalog: CatalogHook, store: LocalFolderStore, octotrain_env: Path
) -> None:
    task, context = validated_secretive_task(catalog, store, {})
    launch = LaunchLocalNodeOperator(task_id="launch", training_task_id=task, node_index="single-0")
    launch._plan = launch.plan_to_start_nodes(context)
    assert launch._masked("HF_TOKEN=hf_saved --api_key=k-1 epochs") == (
        "HF_TOKEN=*** --api_key=*** epochs"
    )
