"""The Airflow internals ``hooks.airflow.airflow_compat`` wraps, one check each: it exists and still
takes the arguments Octotrain passes (no new required one), or still has the columns Octotrain
reads and writes. An Airflow upgrade that changes one fails here first, naming it. Then the
wrappers are run against this process's metadata DB (SQLite), and no other module of the
project may import an Airflow module outside the public interface."""

from __future__ import annotations

import ast
import datetime
import hashlib
import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from airflow.api.common.mark_tasks import set_dag_run_state_to_failed
from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails
from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
from airflow.api_fastapi.core_api.datamodels.dag_run import TriggerDAGRunPostBody
from airflow.assets.manager import AssetManager, asset_manager
from airflow.dag_processing.bundles.manager import DagBundlesManager
from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db
from airflow.models.asset import AssetActive, AssetModel
from airflow.models.dag import DagModel
from airflow.models.dagbag import DagPriorityParsingRequest, DBDagBag
from airflow.models.dagrun import DagRun
from airflow.models.serialized_dag import SerializedDagModel
from airflow.providers.fab.auth_manager.fab_auth_manager import FabAuthManager
from airflow.providers.fab.www.security.permissions import RESOURCE_ROLE
from airflow.sdk.exceptions import ParamValidationError
from airflow.serialization.definitions.dag import SerializedDAG
from airflow.utils.session import create_session
from airflow.utils.types import DagRunTriggeredByType, DagRunType

from hooks.airflow import airflow_compat

ROOT = Path(__file__).resolve().parents[3]


def takes(function: Callable[..., Any], *names: str) -> None:
    """``function`` accepts each of ``names`` by keyword (or as the first positional ones, for
    a method's ``self``), and requires nothing else."""
    parameters = inspect.signature(function).parameters
    by_keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    for name in names:
        assert name in parameters, f"{function.__qualname__} takes no {name!r} any more"
        assert parameters[name].kind in by_keyword, f"{function.__qualname__}: {name!r} kind"
    required = {
        name
        for name, parameter in parameters.items()
        if parameter.default is inspect.Parameter.empty
        and parameter.kind in by_keyword
        and name != "self"
    }
    assert required <= set(names), f"{function.__qualname__} now requires {required - set(names)}"


def has_columns(model: type, *names: str) -> None:
    """``model`` still maps each of ``names`` (a column, a relationship or a proxy)."""
    missing = [name for name in names if not hasattr(model, name)]
    assert not missing, f"{model.__name__} has no {missing} any more"


# One test per internal that hooks/airflow/airflow_compat.py wraps, named after it.


def test_create_session() -> None:
    takes(create_session)


def test_get_auth_manager() -> None:
    takes(get_auth_manager)


def test_dag_access_entity_and_dag_details() -> None:
    assert DagAccessEntity.RUN.name == "RUN"
    assert DagDetails(id="a_dag").id == "a_dag"


def test_simple_auth_manager_user_role() -> None:
    assert SimpleAuthManagerUser(username="alice", role="admin").role == "admin"


def test_fab_auth_manager_custom_view_and_role_resource() -> None:
    takes(FabAuthManager.is_authorized_custom_view, "self", "method", "resource_name", "user")
    assert isinstance(RESOURCE_ROLE, str)


def test_dag_run_model() -> None:
    has_columns(DagRun, "dag_id", "run_id", "state", "conf", "note", "dag_run_note")
    takes(DagRun.set_state, "self", "state")


def test_dag_model() -> None:
    has_columns(DagModel, "dag_id", "is_stale", "is_paused", "has_import_errors",
                "bundle_name", "relative_fileloc")  # fmt: skip


def test_serialized_dag_model_get_dag() -> None:
    takes(SerializedDagModel.get_dag, "dag_id", "session")


def test_set_dag_run_state_to_failed() -> None:
    takes(set_dag_run_state_to_failed, "dag", "run_id", "commit", "session")


def test_db_dag_bag_latest_version() -> None:
    takes(DBDagBag.get_latest_version_of_dag, "self", "dag_id", "session")


def test_trigger_dag_run_post_body_validate_context() -> None:
    takes(TriggerDAGRunPostBody.validate_context, "self", "dag")
    assert {"dag_run_id", "logical_date", "conf"} <= set(TriggerDAGRunPostBody.model_fields)


def test_serialized_dag_create_dagrun_and_run_types() -> None:
    takes(SerializedDAG.create_dagrun, "self", "run_id", "logical_date", "data_interval",
          "run_after", "conf", "run_type", "triggered_by", "triggering_user_name", "state",
          "partition_key", "partition_date", "session")  # fmt: skip
    assert DagRunType.MANUAL.value == "manual"
    assert {DagRunTriggeredByType.UI, DagRunTriggeredByType.REST_API} <= set(DagRunTriggeredByType)


def test_dag_priority_parsing_request() -> None:
    takes(DagPriorityParsingRequest, "bundle_name", "relative_fileloc")
    has_columns(DagPriorityParsingRequest, "id", "bundle_name", "relative_fileloc")


def test_supervisor_comms_trigger_dag_run() -> None:
    from airflow.sdk.exceptions import ErrorType
    from airflow.sdk.execution_time import task_runner
    from airflow.sdk.execution_time.comms import ErrorResponse, TriggerDagRun

    # declared at import, set when the task runner starts
    assert "SUPERVISOR_COMMS" in task_runner.__annotations__
    assert {"dag_id", "run_id", "conf", "logical_date", "note"} <= set(TriggerDagRun.model_fields)
    assert ErrorType.DAGRUN_ALREADY_EXISTS.name == "DAGRUN_ALREADY_EXISTS"
    assert {"error", "detail"} <= set(ErrorResponse.model_fields)


def test_asset_models() -> None:
    has_columns(AssetModel, "uri")
    has_columns(AssetActive, "uri")


def test_asset_manager_register_asset_change() -> None:
    assert isinstance(asset_manager, AssetManager)
    takes(AssetManager.register_asset_change, "asset", "extra", "source_is_api", "session")


# Airflow modules that are its public interface (its "Public Interface for Airflow 3.0+" page,
# and the plugins page for ``get_user``), or a provider's hooks, operators and triggers.
PUBLIC_MODULES = (
    "airflow.sdk",
    "airflow.exceptions",
    "airflow.utils.state",
    "airflow.triggers.base",
    "airflow.plugins_manager",
    "airflow.api_fastapi.core_api.security",
    "airflow.api_fastapi.auth.managers.base_auth_manager",
    "airflow.api_fastapi.auth.managers.models.base_user",
    "airflow.providers.cncf.kubernetes.hooks",
    "airflow.providers.cncf.kubernetes.operators",
    "airflow.providers.cncf.kubernetes.triggers",
    "airflow.providers.amazon.aws.hooks",
)
COMPAT_MODULE = ROOT / "hooks" / "airflow" / "airflow_compat.py"


def airflow_imports(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def is_public(module: str) -> bool:
    return any(module == public or module.startswith(public + ".") for public in PUBLIC_MODULES)


def test_only_the_compat_module_imports_airflow_internals() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {module}"
        for folder in ("hooks", "operators", "dags", "plugins", "cli")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != COMPAT_MODULE
        for module in airflow_imports(path)
        if (module == "airflow" or module.startswith("airflow.")) and not is_public(module)
    ]
    assert found == [], "Airflow internals outside hooks/airflow/airflow_compat.py"


DAG_ID = "octotrain_task_90002"
DAG_FILE = f"""
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Param

with DAG(dag_id="{DAG_ID}", schedule=None, params={{"epochs": Param(3, type="integer")}}):
    EmptyOperator(task_id="validate")
"""


@pytest.fixture
def parsed_dag(airflow_metadata_db: None, tmp_path: Path) -> Iterator[str]:
    """The DAG as the dag-processor would have stored it."""
    (tmp_path / "dag.py").write_text(DAG_FILE)
    DagBundlesManager().sync_bundles_to_db()
    sync_bag_to_db(DagBag(dag_folder=str(tmp_path)), "dags-folder", None)
    yield DAG_ID
    with create_session() as session:
        for model in (DagRun, SerializedDagModel, DagModel):
            session.execute(model.__table__.delete().where(model.dag_id == DAG_ID))
        session.execute(DagPriorityParsingRequest.__table__.delete())


def test_a_manual_run_is_created_with_its_conf_judged_and_noted(parsed_dag: str) -> None:
    user = SimpleAuthManagerUser(username="alice", role="user")
    refused = pytest.raises((ParamValidationError, ValueError), match="epochs")
    with airflow_compat.metadata_session() as session, refused:
        airflow_compat.create_manual_run(
            session, dag_id=parsed_dag, run_id="request__bad", conf={"epochs": "many"},
            user=user, from_ui=False,
        )  # fmt: skip
    with airflow_compat.metadata_session() as session:
        run = airflow_compat.create_manual_run(
            session, dag_id=parsed_dag, run_id="request__1", conf={"epochs": 5}, user=user,
            from_ui=True,
        )  # fmt: skip
        assert run is not None
        assert (run.run_id, str(run.state), run.conf) == ("request__1", "queued", {"epochs": 5})
        assert (run.triggered_by, run.triggering_user_name) == (DagRunTriggeredByType.UI, "alice")
        assert airflow_compat.create_manual_run(
            session, dag_id="octotrain_task_none", run_id=None, conf={}, user=user,
            from_ui=False,
        ) is None  # fmt: skip
    with airflow_compat.metadata_session() as session:
        found = airflow_compat.find_dag_run(session, dag_id=parsed_dag, run_id="request__1")
        assert found is not None and airflow_compat.run_note(found) is None
        airflow_compat.set_run_note(found, note="first", user_id="alice")
    with airflow_compat.metadata_session() as session:
        found = airflow_compat.find_dag_run(session, dag_id=parsed_dag, run_id="request__1")
        assert found is not None and airflow_compat.run_note(found) == "first"
        airflow_compat.set_run_note(found, note="first\n\nsecond", user_id="bob")
        assert [run.run_id for run in airflow_compat.unfinished_dag_runs(
            session, dag_id=parsed_dag)] == ["request__1"]  # fmt: skip
    with airflow_compat.metadata_session() as session:
        found = airflow_compat.find_dag_run(session, dag_id=parsed_dag, run_id="request__1")
        assert found is not None and found.note == "first\n\nsecond"
        assert found.dag_run_note.user_id == "bob"


def test_a_parse_request_is_keyed_as_airflow_keys_it_and_queued_once(parsed_dag: str) -> None:
    with airflow_compat.metadata_session() as session:
        known = airflow_compat.dag_file_of_prefix(session, prefix="octotrain_", preferred=DAG_ID)
        assert known is not None and known[0] == "dags-folder"
        assert known[1].endswith("dag.py")
        for _ in range(2):
            airflow_compat.request_parse(session, bundle=known[0], relative_fileloc=known[1])
            session.flush()
    with airflow_compat.metadata_session() as session:
        requests = session.query(DagPriorityParsingRequest).all()
        assert [(request.id, request.relative_fileloc) for request in requests] == [
            (hashlib.md5(f"dags-folder:{known[1]}".encode()).hexdigest(), known[1])
        ]


def test_an_event_of_an_asset_no_dag_is_scheduled_on_is_not_registered(
    airflow_metadata_db: None,
) -> None:
    with airflow_compat.metadata_session() as session:
        uri = "octotrain://nobody/schedules/on-this"
        assert airflow_compat.register_asset_event(session, uri=uri, extra={}) is None


def test_a_retired_dag_is_stale_not_paused_and_its_run_failed(parsed_dag: str) -> None:
    now = datetime.datetime.now(datetime.UTC)
    with airflow_compat.metadata_session() as session:
        dag = SerializedDagModel.get_dag(parsed_dag, session=session)
        assert dag is not None
        dag.create_dagrun(run_id="manual__1", run_after=now, run_type=DagRunType.MANUAL,
                          triggered_by=DagRunTriggeredByType.TEST, state="running",
                          session=session)  # fmt: skip
    with airflow_compat.metadata_session() as session:
        model = airflow_compat.dag_model(session, dag_id=parsed_dag)
        assert model is not None
        airflow_compat.retire_dag_model(model)
        for run in airflow_compat.unfinished_dag_runs(session, dag_id=parsed_dag):
            airflow_compat.fail_dag_run(session, run)
    with airflow_compat.metadata_session() as session:
        model = airflow_compat.dag_model(session, dag_id=parsed_dag)
        assert model is not None and (model.is_paused, model.is_stale) == (False, True)
        assert airflow_compat.unfinished_dag_runs(session, dag_id=parsed_dag) == []
        run = airflow_compat.find_dag_run(session, dag_id=parsed_dag, run_id="manual__1")
        assert run is not None and str(run.state) == "failed"
