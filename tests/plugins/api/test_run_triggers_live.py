"""Starting runs against a real Airflow api-server (with the plugin) started by the test:
Airflow's own REST API through the official ``apache-airflow-client``, with a conf checked
against the DAG's Params, and the plugin's ``POST /api/v1/tasks/{id}/runs`` (judged by the
task rules, idempotent by request id). Publishing a dataset version emits its Asset event,
which queues a run of the task that retrains on it. No scheduler runs here: runs stay queued.
"""

from __future__ import annotations

from collections.abc import Iterator

import airflow_client.client as airflow_client
import httpx
import pytest
from airflow_client.client.api.asset_api import AssetApi
from airflow_client.client.api.dag_api import DAGApi
from airflow_client.client.api.dag_run_api import DagRunApi
from airflow_client.client.exceptions import ApiException
from airflow_client.client.models.trigger_dag_run_post_body import TriggerDAGRunPostBody

from cli.demo import DemoSeed
from hooks.airflow.airflow_rest import wait_until
from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog.dataset_versions import DatasetVersions
from octotrain.contracts import dag_id_for
from octotrain.retraining import dataset_asset_uri
from octotrain.settings import get_settings
from tests.conftest import BACKENDS, postgres_database
from tests.factories import ADMIN, add_task
from tests.live_airflow import HTTP_SECONDS, SCHEDULER_SECONDS, LiveAirflow, demo_airflow

PLUGIN = "/octotrain/api/v1"


@pytest.fixture(scope="module", params=BACKENDS)
def airflow(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LiveAirflow, dict]]:
    """Airflow with the demo task, a task that retrains on house-prices daily, and a version
    v2 of house-prices awaiting release; Airflow's metadata DB and the catalog on SQLite, or
    both on PostgreSQL (each its own database)."""
    root = tmp_path_factory.mktemp(f"live-runs-{request.param}")
    databases = [postgres_database() for _ in range(2)] if request.param == "postgresql" else []
    metadata_url, catalog_url = (
        (next(database) for database in databases)
        if databases
        else (
            None,
            None,
        )
    )
    settings = {"OCTOTRAIN_STATE_DIR": str(root / "state")}
    if catalog_url:
        settings["OCTOTRAIN_CATALOG_URL"] = catalog_url

    def retraining(catalog: CatalogHook, store: LocalFolderStore, demo: DemoSeed) -> dict[str, int]:
        retrains = add_task(
            catalog, name="nightly", schedule="0 3 * * *", retrain_on=["house-prices"]
        )
        rows = root / "v2.csv"
        rows.write_text("x0,y\n1,2\n")
        with catalog.session() as session:
            DatasetVersions(session, ADMIN, store).create(
                "demo", "house-prices", {"version": "v2"}, {"train.csv": rows}
            )
        doomed = {name: add_task(catalog, name=name) for name in ("doomed", "doomed-cli")}
        return {"demo": demo.task_id, "nightly": retrains} | doomed

    with demo_airflow(root, settings, retraining, metadata_url=metadata_url) as (server, tasks):
        yield server, tasks
    for database in databases:
        next(database, None)  # drops it


@pytest.fixture(scope="module")
def client(airflow: tuple[LiveAirflow, dict]) -> Iterator[airflow_client.ApiClient]:
    server, _tasks = airflow
    configuration = airflow_client.Configuration(host=server.url, access_token=server.admin_token())
    with airflow_client.ApiClient(configuration) as api_client:
        yield api_client


@pytest.fixture(scope="module")
def plugin(airflow: tuple[LiveAirflow, dict]) -> Iterator[httpx.Client]:
    server, _tasks = airflow
    headers = server.admin_headers()
    with httpx.Client(base_url=server.url + PLUGIN, headers=headers, timeout=HTTP_SECONDS) as http:
        yield http


def run_ids(client: airflow_client.ApiClient, dag_id: str) -> list[str]:
    return [run.dag_run_id for run in DagRunApi(client).get_dag_runs(dag_id).dag_runs]


def test_the_dag_declares_typed_params_for_airflows_trigger_form(
    airflow: tuple[LiveAirflow, dict], client: airflow_client.ApiClient
) -> None:
    _server, tasks = airflow
    details = DAGApi(client).get_dag_details(dag_id_for(tasks["demo"]))
    params = details.params
    assert params["epochs"]["value"] == 60  # the task's saved value
    assert params["epochs"]["schema"] | {} == {
        "title": "epochs",
        "section": "Algorithm parameters",
        "type": ["integer", "null"],  # null: as saved
        "minimum": 1,
        "maximum": 100000,
    }
    assert params["node_count"]["schema"]["maximum"] == 4  # cpu-small allows 4 nodes
    assert params["priority"]["schema"]["minimum"] == -50
    assert params["env"]["schema"]["additionalProperties"] is False


def test_airflows_own_trigger_takes_a_conf_and_refuses_one_that_breaks_the_params(
    airflow: tuple[LiveAirflow, dict], client: airflow_client.ApiClient
) -> None:
    _server, tasks = airflow
    dag_id = dag_id_for(tasks["demo"])
    api = DagRunApi(client)
    run = api.trigger_dag_run(
        dag_id, TriggerDAGRunPostBody(logical_date=None, conf={"epochs": 7, "node_count": 1})
    )
    assert run.conf == {"epochs": 7, "node_count": 1} and run.state.value == "queued"
    as_saved = {"epochs": None, "node_count": None, "priority": None, "env": None}
    run = api.trigger_dag_run(dag_id, TriggerDAGRunPostBody(logical_date=None, conf=as_saved))
    assert run.conf == as_saved  # the README: null means "as saved"
    before = run_ids(client, dag_id)
    for conf, words in (
        ({"epochs": 0}, "0 is less than the minimum of 1"),
        ({"epochs": "many"}, "'many' is not of type 'integer', 'null'"),
        ({"node_count": 99}, "99 is greater than the maximum of 4"),
        ({"env": {"NOT_DECLARED": "1"}}, "Additional properties are not allowed"),
        ({"env": {"OMP_NUM_THREADS": "1\x00"}}, "does not match"),
        ({"env": {"OMP_NUM_THREADS": "1" * 8193}}, "is too long"),
    ):
        with pytest.raises(ApiException) as refused:
            api.trigger_dag_run(dag_id, TriggerDAGRunPostBody(logical_date=None, conf=conf))
        assert refused.value.status == 400, conf
        assert words in refused.value.body, refused.value.body
    assert run_ids(client, dag_id) == before  # nothing was started


def test_the_plugin_starts_a_judged_run_once_per_request_id(
    airflow: tuple[LiveAirflow, dict], client: airflow_client.ApiClient, plugin: httpx.Client
) -> None:
    _server, tasks = airflow
    task, dag_id = tasks["demo"], dag_id_for(tasks["demo"])
    body = {"request_id": "retry-me-1", "conf": {"epochs": 9, "learning_rate": 0.5}}
    first = plugin.post(f"/tasks/{task}/runs", json=body)
    assert first.status_code == 201, first.text
    started = first.json()
    assert started["created"] is True and started["dag_run_id"] == "request__retry-me-1"
    assert started["run"]["state"] == "queued" and started["run"]["triggered_by"] == "admin"
    again = plugin.post(f"/tasks/{task}/runs", json=body)
    assert again.status_code == 200 and again.json()["created"] is False
    assert again.json()["run"]["id"] == started["run"]["id"]
    assert run_ids(client, dag_id).count("request__retry-me-1") == 1
    airflow_run = DagRunApi(client).get_dag_run(dag_id, "request__retry-me-1")
    assert airflow_run.conf == body["conf"] and airflow_run.triggering_user_name == "admin"
    as_saved = plugin.post(f"/tasks/{task}/runs", json={"conf": {"epochs": None, "env": None}})
    assert as_saved.status_code == 201, as_saved.text
    other = plugin.post(f"/tasks/{task}/runs", json=body | {"conf": {"epochs": 10}})
    assert other.status_code == 409 and "other settings" in other.json()["detail"]
    listed = plugin.get(f"/tasks/{task}/runs").json()["runs"]
    assert [run["airflow_run_id"] for run in listed].count("request__retry-me-1") == 1


def test_retries_racing_with_the_same_request_id_get_one_run(
    airflow: tuple[LiveAirflow, dict], client: airflow_client.ApiClient, plugin: httpx.Client
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    _server, tasks = airflow
    task = tasks["demo"]
    body = {"request_id": "raced-1", "conf": {"epochs": 11}}
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda _: plugin.post(f"/tasks/{task}/runs", json=body), range(4)))
    assert all(answer.status_code in (200, 201) for answer in answers), [a.text for a in answers]
    assert [answer.json()["created"] for answer in answers].count(True) == 1
    assert {answer.json()["run"]["id"] for answer in answers} == {answers[0].json()["run"]["id"]}
    assert run_ids(client, dag_id_for(task)).count("request__raced-1") == 1


def test_the_plugin_refuses_bad_settings_with_the_field_and_starts_nothing(
    airflow: tuple[LiveAirflow, dict], client: airflow_client.ApiClient, plugin: httpx.Client
) -> None:
    _server, tasks = airflow
    task, dag_id = tasks["demo"], dag_id_for(tasks["demo"])
    before = run_ids(client, dag_id)
    for conf, field, words in (
        ({"epochs": 0}, "parameters.epochs", "must be within [1, 100000], got 0"),
        ({"dropout": 0.1}, "parameters.dropout", "has no parameter 'dropout'"),
        ({"node_count": 5}, "node_count", "at most 4"),
        ({"input_models": [{"repository": "house-price-model", "version": 1}]},
         "input_models", "only for incremental training"),
        ({"env": "x"}, "conf.env", "must be an object"),
        ({"env": {"OMP_NUM_THREADS": "1\x00"}}, "env.OMP_NUM_THREADS",
         "must not contain control characters"),
        ({"env": {"OMP_NUM_THREADS": "1" * 1_000_000}}, "env.OMP_NUM_THREADS",
         "must be at most 8192 characters, got 1000000"),
    ):  # fmt: skip
        refused = plugin.post(f"/tasks/{task}/runs", json={"conf": conf})
        assert refused.status_code == 400, (conf, refused.text)
        problem = refused.json()["problems"][0]
        assert problem["field"] == field and words in problem["rule"], refused.json()
    malformed = plugin.post(f"/tasks/{task}/runs", json={"request_id": "bad id!"})
    assert malformed.status_code == 422
    # A conf of 10 MB is not even read: over OCTOTRAIN_MAX_REQUEST_BYTES.
    huge = plugin.post(f"/tasks/{task}/runs", json={"conf": {"env": {"X": "1" * 10_000_000}}})
    assert huge.status_code == 413 and "1048576 bytes" in huge.json()["detail"]
    assert run_ids(client, dag_id) == before


def test_publishing_a_version_queues_the_task_that_retrains_on_the_dataset(
    airflow: tuple[LiveAirflow, dict], client: airflow_client.ApiClient, plugin: httpx.Client
) -> None:
    _server, tasks = airflow
    dag_id = dag_id_for(tasks["nightly"])
    assert DAGApi(client).get_dag(dag_id).timetable_summary  # cron or the dataset
    published = plugin.post("/projects/demo/datasets/house-prices/versions/v2/publish")
    assert published.status_code == 200, published.text
    uri = dataset_asset_uri("demo", "house-prices")
    [asset] = [a for a in AssetApi(client).get_assets(uri_pattern=uri).assets if a.uri == uri]
    [event] = AssetApi(client).get_asset_events(asset_id=asset.id).asset_events
    assert event.extra["version"] == "v2" and event.extra["dataset"] == "house-prices"
    queued = AssetApi(client).get_dag_asset_queued_events(dag_id).queued_events
    assert [item.asset_id for item in queued] == [asset.id]
    # publishing again is no news: no second event
    assert plugin.post("/projects/demo/datasets/house-prices/versions/v2/publish").is_success
    assert len(AssetApi(client).get_asset_events(asset_id=asset.id).asset_events) == 1


def test_deleting_a_task_retires_its_dag_at_once_and_leaves_no_run_waiting(
    airflow: tuple[LiveAirflow, dict], client: airflow_client.ApiClient, plugin: httpx.Client
) -> None:
    _server, tasks = airflow
    dag_id = dag_id_for(tasks["doomed"])
    api = DagRunApi(client)
    queued = api.trigger_dag_run(dag_id, TriggerDAGRunPostBody(logical_date=None))  # no scheduler
    assert plugin.delete(f"/tasks/{tasks['doomed']}").status_code == 204
    # At once, unless a parse that began before the delete saves the DAG again meanwhile:
    # then the parse the delete asked for retires it (a run started between fails at once).
    wait_until(
        "Airflow's trigger to refuse the deleted task's DAG",
        lambda: refused_as_unknown(api, dag_id),
        timeout=SCHEDULER_SECONDS,
        every=0.5,
    )
    ended = api.get_dag_run(dag_id, queued.dag_run_id)
    assert (ended.state, ended.note) == ("failed", "training task 'doomed' was deleted by admin")


def refused_as_unknown(api: DagRunApi, dag_id: str) -> bool:
    try:
        api.trigger_dag_run(dag_id, TriggerDAGRunPostBody(logical_date=None))
    except ApiException as refused:
        assert refused.status == 404
        return True
    return False


def test_the_command_lines_delete_ends_the_dags_runs_through_airflows_api(
    airflow: tuple[LiveAirflow, dict], client: airflow_client.ApiClient
) -> None:
    from typer.testing import CliRunner

    from cli.main import app

    server, tasks = airflow
    dag_id = dag_id_for(tasks["doomed-cli"])
    queued = DagRunApi(client).trigger_dag_run(dag_id, TriggerDAGRunPostBody(logical_date=None))
    settings = {
        "OCTOTRAIN_AIRFLOW_API_URL": server.url,
        "OCTOTRAIN_AIRFLOW_PASSWORD": server.password,
    }
    with pytest.MonkeyPatch.context() as patch:
        for key, value in (server.env | settings).items():
            if key.startswith("OCTOTRAIN_"):
                patch.setenv(key, value)
        get_settings.cache_clear()
        try:
            result = CliRunner().invoke(app, ["task", "delete", str(tasks["doomed-cli"])])
        finally:
            get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    assert "ended 1 unfinished run(s) of its DAG in Airflow" in result.output
    ended = DagRunApi(client).get_dag_run(dag_id, queued.dag_run_id)
    assert (ended.state, ended.note) == ("failed", "training task 'doomed-cli' was deleted")
