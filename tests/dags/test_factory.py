"""The DAG factory, on catalogs in SQLite and PostgreSQL."""

import json
from pathlib import Path

import pytest
from airflow.dag_processing.dagbag import DagBag
from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator

from dags.factory import STAGE_SLOTS, build_all_dags
from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import LocalFolderStore
from octotrain.contracts import dag_id_for, task_id_from_dag_id
from octotrain.settings import REPO_ROOT, get_settings
from tests.factories import add_task, seed

DAGS_FOLDER = REPO_ROOT / "dags"


def test_one_dag_per_task_with_the_pipeline(
    catalog: CatalogHook, store: LocalFolderStore, octotrain_env: Path
) -> None:
    demo = seed(catalog, store)
    other = add_task(catalog, name="second", node_count=1, priority=-50)
    dags = build_all_dags(catalog.url)
    assert sorted(dags) == [dag_id_for(demo.task_id), dag_id_for(other)]

    dag = dags[dag_id_for(demo.task_id)]
    assert dag.dag_display_name == "演示-房价回归"
    assert dag.dag_id.isascii()
    assert dag.schedule is None and dag.catchup is False
    assert set(dag.task_ids) == {
        "validate",
        "stage_data",
        "launch",
        "collect_logs",
        "archive_model",
    }
    # launch also depends on validate: it is mapped over the node list validate returns
    assert dag.get_task("validate").downstream_task_ids == {"stage_data", "launch"}
    assert dag.get_task("stage_data").downstream_task_ids == {"launch"}
    assert dag.get_task("launch").downstream_task_ids == {"collect_logs", "archive_model"}
    assert dag.get_task("collect_logs").trigger_rule == "all_done"
    assert dag.get_task("archive_model").upstream_task_ids == {"launch", "collect_logs"}
    assert dag.get_task("launch").map_index_template == "{{ task.node_index }}"
    # A run may raise its nodes to the spec's limit (cpu-small: 4), each beside the stages: a
    # task saved with 1 node and run with 4 must run all 4 at once (they meet at rendezvous).
    assert dags[dag_id_for(other)].max_active_tasks == 4 + STAGE_SLOTS
    assert dag.get_task("validate").priority_weight == 61  # priority 10
    # a training is never retried behind the user's back; only archiving (idempotent) is
    assert {task.task_id: task.retries for task in dag.tasks if task.retries} == {
        "archive_model": 2
    }
    assert dags[dag_id_for(other)].get_task("validate").priority_weight == 1  # priority -50


def test_dag_id_round_trip() -> None:
    assert task_id_from_dag_id(dag_id_for(42)) == 42
    with pytest.raises(ValueError, match="not an Octotrain"):
        task_id_from_dag_id("example_bash_operator")


def test_dag_file_loads_every_task(
    catalog: CatalogHook, store: LocalFolderStore, octotrain_env: Path
) -> None:
    demo = seed(catalog, store)
    bag = DagBag(dag_folder=DAGS_FOLDER)
    assert bag.import_errors == {}
    assert sorted(bag.dags) == [
        "octotrain_data_caches",
        "octotrain_orphan_objects",
        "octotrain_sweeps",
        dag_id_for(demo.task_id),
    ]


def as_task_runner_of(monkeypatch: pytest.MonkeyPatch, dag_id: str) -> None:
    """Airflow's parsing context, as a task runner of ``dag_id``'s ``validate`` sets it."""
    monkeypatch.setenv("_AIRFLOW_PARSING_CONTEXT_DAG_ID", dag_id)
    monkeypatch.setenv("_AIRFLOW_PARSING_CONTEXT_TASK_ID", "validate")


def test_a_task_runner_builds_only_the_dag_it_runs(
    catalog: CatalogHook,
    store: LocalFolderStore,
    octotrain_env: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Airflow's parsing context names the DAG: a task start costs the same with 1 or 5,000
    tasks in the catalog (bench.scale)."""
    demo = seed(catalog, store)
    other = add_task(catalog, name="other")
    as_task_runner_of(monkeypatch, dag_id_for(other))
    built = build_all_dags(catalog.url, only_dag_id=dag_id_for(other))
    assert list(built) == [dag_id_for(other)]
    assert built[dag_id_for(other)].params.get_param("epochs").value == 5
    tasks_file = [d for d in DagBag(dag_folder=DAGS_FOLDER).dags if d.startswith("octotrain_task_")]
    assert tasks_file == [dag_id_for(other)]
    assert build_all_dags(catalog.url, only_dag_id="octotrain_data_caches") == {}
    assert set(build_all_dags(catalog.url)) == {dag_id_for(demo.task_id), dag_id_for(other)}


def test_a_task_runner_of_a_deleted_tasks_run_gets_a_dag_that_fails_at_once(
    catalog: CatalogHook,
    store: LocalFolderStore,
    octotrain_env: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without it the runner finds no DAG and Airflow reschedules it for minutes."""
    from airflow.sdk.exceptions import AirflowFailException

    demo = seed(catalog, store)
    gone = dag_id_for(demo.task_id + 1000)
    assert gone not in DagBag(dag_folder=DAGS_FOLDER).dags  # the dag-processor's parse
    as_task_runner_of(monkeypatch, gone)
    dags = DagBag(dag_folder=DAGS_FOLDER).dags
    assert dag_id_for(demo.task_id) not in dags  # a task runner builds only its DAG
    stand_in = dags[gone]
    assert set(stand_in.task_dict) >= {"validate", "stage_data", "launch", "collect_logs"}
    with pytest.raises(AirflowFailException, match=f"training task {demo.task_id + 1000} was "
                       "deleted from the catalog; this run of its DAG cannot start"):  # fmt: skip
        stand_in.get_task("validate").execute({})
    as_task_runner_of(monkeypatch, "some_other_dag")
    assert "some_other_dag" not in DagBag(dag_folder=DAGS_FOLDER).dags


@pytest.mark.parametrize("catalog_url", ["sqlite"], indirect=True)
def test_unreadable_catalog_is_an_import_error_not_zero_dags(
    catalog_url: str, octotrain_env: Path
) -> None:
    """The catalog exists but was never migrated: the DAG file must fail loudly."""
    bag = DagBag(dag_folder=DAGS_FOLDER)
    assert sorted(bag.dags) == [
        "octotrain_data_caches",
        "octotrain_orphan_objects",
        "octotrain_sweeps",
    ]
    [error] = bag.import_errors.values()
    assert "training_tasks" in error


def test_the_kubernetes_launcher_runs_nodes_as_pods_and_tears_the_service_down(
    catalog: CatalogHook,
    store: LocalFolderStore,
    octotrain_env: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    demo = seed(catalog, store)
    monkeypatch.setenv("OCTOTRAIN_LAUNCHER", "kubernetes")
    get_settings.cache_clear()
    dag = build_all_dags(catalog.url)[dag_id_for(demo.task_id)]
    launch = dag.get_task("launch")
    assert issubclass(launch.operator_class, KubernetesPodOperator)
    assert launch.map_index_template == "{{ task.node_index }}"
    assert type(dag.get_task("stage_data")).__name__ == "PreparePodsOperator"
    teardown = dag.get_task("delete_service")
    assert teardown.is_teardown and teardown.trigger_rule == "all_done_setup_success"
    assert teardown.upstream_task_ids == {"stage_data", "collect_logs", "archive_model"}
    assert dag.get_task("collect_logs").trigger_rule == "all_done"


def test_params_are_the_runs_settings_with_the_saved_values(
    catalog: CatalogHook, store: LocalFolderStore, octotrain_env: Path
) -> None:
    demo = seed(catalog, store)
    params = build_all_dags(catalog.url)[dag_id_for(demo.task_id)].params
    assert params.dump() == {
        "node_count": 2,
        "priority": 10,
        "max_wait_seconds": None,  # the task has no time limits
        "max_training_seconds": None,
        "resume_from": None,  # a fresh run unless a failed or stopped run is named
        "epochs": 60,
        "learning_rate": 0.05,
        "batch_size": 64,
        "seed": 0,
        "env": {"OMP_NUM_THREADS": "1"},
    }
    assert params.get_param("learning_rate").schema["type"] == ["number", "null"]
    assert params.get_param("node_count").schema["maximum"] == 4
    params.validate()  # the saved values fit their own schema
    from airflow.sdk.exceptions import ParamValidationError

    with pytest.raises(ParamValidationError, match="less than the minimum of 1"):
        params.get_param("epochs").resolve(0)


def test_a_task_without_value_for_a_parameter_gets_an_optional_field(
    catalog: CatalogHook, store: LocalFolderStore, octotrain_env: Path
) -> None:
    from dags.run_params import algorithm_param

    param = algorithm_param({"name": "tag", "type": "string"}, None)
    assert param.schema["type"] == ["string", "null"] and param.resolve() is None
    choice = algorithm_param({"name": "opt", "type": "enum", "choices": ["a", "b"]}, "a")
    assert choice.schema["enum"] == ["a", "b", None]


def test_null_means_as_saved_for_every_param(
    catalog: CatalogHook, store: LocalFolderStore, octotrain_env: Path
) -> None:
    """The README: a null value in a run's conf means "as saved"; Airflow must let it through
    to ``validate``, which applies the saved value."""
    demo = seed(catalog, store)
    params = build_all_dags(catalog.url)[dag_id_for(demo.task_id)].params
    for name in params:
        assert params.get_param(name).resolve(None) is None, name


def test_string_values_carry_the_text_rule_into_airflows_trigger(
    catalog: CatalogHook, store: LocalFolderStore, octotrain_env: Path
) -> None:
    from airflow.sdk.exceptions import ParamValidationError

    from dags.run_params import algorithm_param

    tag = algorithm_param({"name": "tag", "type": "string", "max_length": 5}, "x")
    assert tag.schema["maxLength"] == 5
    for refused in ["abcdef", "a\x00b", "line\n"]:
        with pytest.raises(ParamValidationError):
            tag.resolve(refused)
    assert tag.resolve("abcde") == "abcde"
    free = algorithm_param({"name": "note", "type": "string"}, None)
    assert free.schema["maxLength"] == 8192
    demo = seed(catalog, store)
    env = build_all_dags(catalog.url)[dag_id_for(demo.task_id)].params.get_param("env")
    with pytest.raises(ParamValidationError):
        env.resolve({"OMP_NUM_THREADS": "1\x00"})
    with pytest.raises(ParamValidationError):
        env.resolve({"OMP_NUM_THREADS": "1" * 8193})
    assert env.resolve({"OMP_NUM_THREADS": "4"}) == {"OMP_NUM_THREADS": "4"}


def test_retraining_tasks_are_scheduled_by_cron_by_dataset_or_by_either(
    catalog: CatalogHook, store: LocalFolderStore, octotrain_env: Path
) -> None:
    from airflow.sdk import AssetAny, AssetOrTimeSchedule, CronTriggerTimetable

    seed(catalog, store)
    cron = add_task(catalog, name="cron", schedule="@daily")
    data = add_task(catalog, name="data", retrain_on=["house-prices"])
    both = add_task(catalog, name="both", schedule="0 3 * * *", retrain_on=["house-prices"])
    dags = build_all_dags(catalog.url)
    timetable = dags[dag_id_for(cron)].timetable
    assert isinstance(timetable, CronTriggerTimetable) and timetable.expression == "0 0 * * *"
    assert isinstance(dags[dag_id_for(data)].schedule, AssetAny)
    [asset] = dags[dag_id_for(data)].schedule.objects
    assert asset.uri == "x-octotrain://datasets/demo/house-prices"
    assert isinstance(dags[dag_id_for(both)].schedule, AssetOrTimeSchedule)
    assert all(dag.catchup is False for dag in dags.values())


def test_secrets_never_enter_the_params_airflow_shows_and_stores(
    catalog: CatalogHook, store: LocalFolderStore, octotrain_env: Path
) -> None:
    """A secret variable's or parameter's Param is ``***`` (the saved value) or null: its value
    is not in the serialized DAG, and Airflow's form and REST API refuse any other value."""
    from airflow.sdk.exceptions import ParamValidationError
    from airflow.serialization.serialized_objects import DagSerialization

    from tests.factories import add_secretive_algorithm

    seed(catalog, store)
    add_secretive_algorithm(
        catalog,
        env={"API_TOKEN": "abc123", "THREADS": "2"},
        parameters=[{"name": "api_key", "type": "string", "default": "k-1"}],
    )
    task = add_task(catalog, name="secretive", algorithm="with-secrets", parameters={},
                    env={"API_TOKEN": "saved-in-task"})  # fmt: skip
    dag = build_all_dags(catalog.url)[dag_id_for(task)]
    assert dag.params.dump()["env"] == {"API_TOKEN": "***", "THREADS": "2"}
    assert dag.params.dump()["api_key"] == "***"
    serialized = json.dumps(DagSerialization.to_dict(dag))
    for value in ("abc123", "saved-in-task", "k-1"):
        assert value not in serialized
    with pytest.raises(ParamValidationError):
        dag.params.get_param("env").resolve({"API_TOKEN": "typed-in-airflow", "THREADS": "2"})
    with pytest.raises(ParamValidationError):
        dag.params.get_param("api_key").resolve("typed-in-airflow")
    assert "saved with the task" in dag.params.get_param("api_key").description


def test_every_parameter_s_field_says_its_type_range_and_default() -> None:
    """Airflow's form sets an out-of-range number to the bound without a word: the range must
    be on the field before a user types."""
    from dags.run_params import algorithm_param

    epochs = algorithm_param(
        {"name": "epochs", "type": "int", "min": 1, "max": 1000, "default": 40,
         "description": "passes over the data"}, 60,
    )  # fmt: skip
    assert epochs.description == "int, 1 to 1000, default 40. passes over the data"
    rate = algorithm_param({"name": "lr", "type": "float", "min": 0.0001, "default": 0.01}, None)
    assert rate.description == "float, at least 0.0001, default 0.01"
    choice = algorithm_param({"name": "opt", "type": "enum", "choices": ["sgd", "adam"]}, None)
    assert choice.description == "enum, one of sgd, adam, no default"
    flag = algorithm_param({"name": "amp", "type": "bool", "default": False}, None)
    assert flag.description == "bool, default false"
