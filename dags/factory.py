"""The DAG factory: one parameterised DAG per saved training task.

    validate ─> stage_data ─> launch[node 0..N-1] ─> collect_logs ─> archive_model

``launch`` is mapped over the node list that ``validate`` resolves at run time, so the node
count a run uses is the one valid when it starts, and each node is its own task instance
(``single-0`` / ``distributed-N`` in the UI): a local process (the embedded default) or a
pod through the KubernetesPodOperator (``OCTOTRAIN_LAUNCHER=kubernetes``, where a teardown
deletes the run's headless Service whatever happens).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import (
    DAG,
    AssetAny,
    AssetOrTimeSchedule,
    CronTriggerTimetable,
    ParamsDict,
    WeightRule,
    conf,
)
from sqlalchemy import select
from sqlalchemy.orm import Session

from dags.launcher_stages import configured_stages
from dags.run_callbacks import end_catalog_run_failed
from dags.run_params import run_params
from hooks.airflow.dataset_assets import dataset_asset
from hooks.storage.catalog import CatalogHook
from octotrain.catalog.models import Algorithm, Project, ResourceSpec, TrainingTask
from octotrain.console_urls import console_page
from octotrain.contracts import dag_id_for, task_id_from_dag_id
from octotrain.run_settings import run_node_limit
from octotrain.schedules import CRON_PRESETS
from octotrain.task_spec import TaskSpec
from operators.archive_model import ArchiveModelOperator
from operators.validate import ValidateTaskOperator

# Task priority [-50, 50] becomes an absolute Airflow priority weight in [1, 101].
PRIORITY_WEIGHT_OFFSET = 51
# Room for validate/stage/collect/archive beside the nodes, which must all run at once.
STAGE_SLOTS = 4
ARCHIVE_RETRIES = 2
ARCHIVE_RETRY_DELAY = timedelta(seconds=10)


def task_schedule(spec: TaskSpec, project_name: str) -> Any:
    """The DAG's schedule: none (runs are triggered), the task's cron schedule (UTC), any of its
    retraining datasets' Assets, or either of the two."""
    cron = spec.schedule
    timetable = CronTriggerTimetable(CRON_PRESETS.get(cron, cron), timezone="UTC") if cron else None
    names = spec.retrain_on
    assets = AssetAny(*(dataset_asset(project_name, name) for name in names)) if names else None
    if timetable is not None and assets is not None:
        return AssetOrTimeSchedule(timetable=timetable, assets=assets)
    return timetable or assets


def airflow_dag_defaults() -> dict[str, Any]:
    """The DAG arguments whose defaults Airflow reads from its configuration, read once per
    parse instead of once per DAG (three reads were a tenth of building one)."""
    return {
        "max_active_runs": conf.getint("core", "max_active_runs_per_dag"),
        "max_consecutive_failed_dag_runs": conf.getint(
            "core", "max_consecutive_failed_dag_runs_per_dag"
        ),
        "disable_bundle_versioning": conf.getboolean("dag_processor", "disable_bundle_versioning"),
    }


def task_doc_md(task: TrainingTask, project_name: str) -> str:
    """The DAG's docs, linking back to the task's page in the console. Airflow renders them as
    markdown in its UI, whose pages carry ``<base href>`` of Airflow's root (its base URL's
    path), so a link relative to it reaches the console behind any base URL, from the DAG's
    page or any page below it."""
    page = console_page(f"/ui/tasks/{task.id}")
    return (
        f"Training task **{task.name}** (ID {task.id}) of project {project_name}: its settings, "
        f"runs and their metrics are on [its page in the Octotrain console]({page})."
    )


def build_task_dag(
    task: TrainingTask,
    project_name: str,
    *,
    spec: TaskSpec | None = None,
    algorithm: Algorithm | None = None,
    resource_spec: ResourceSpec | None = None,
    dag_defaults: dict[str, Any] | None = None,
) -> DAG:
    """The DAG that runs training task ``task`` (its document ``spec``, read if not given) with
    the configured launcher; ``algorithm`` and ``resource_spec`` (the task's, when they still
    exist) give the trigger form its fields."""
    spec = spec or task.document
    launcher_stages = configured_stages()
    with DAG(
        **(dag_defaults or airflow_dag_defaults()),
        dag_id=dag_id_for(task.id),
        dag_display_name=task.name,
        description=task.description or f"Octotrain training task {task.name}",
        schedule=task_schedule(spec, project_name),
        catchup=False,
        # A saved task is meant to run (and to retrain on its schedule) without a trip to
        # Airflow's pause toggle; pausing it there still holds its schedule.
        is_paused_upon_creation=False,
        # Every node at once (a distributed job needs all its members), beside the stages; a
        # run's conf may raise the node count up to the limit, so the limit sizes it.
        max_active_tasks=run_node_limit(task.project, resource_spec) + STAGE_SLOTS,
        on_failure_callback=end_catalog_run_failed,
        tags=["octotrain", f"project:{project_name}"],
        default_args={
            "training_task_id": task.id,
            "retries": 0,
            "priority_weight": PRIORITY_WEIGHT_OFFSET + spec.priority,
            "weight_rule": WeightRule.ABSOLUTE,
        },
        doc_md=task_doc_md(task, project_name),
    ) as dag:
        validate = ValidateTaskOperator(task_id="validate")
        # Tried again when its worker dies (the only stage that is: archiving is idempotent),
        # so a version committed just before the death is found, not lost to a failed run.
        archive = ArchiveModelOperator(
            task_id="archive_model", retries=ARCHIVE_RETRIES, retry_delay=ARCHIVE_RETRY_DELAY
        )
        stage, launch, collect = launcher_stages(validate, archive)
        validate >> stage >> launch >> collect >> archive
        launch >> archive
    # Given after the operators: each operator would deep-copy the DAG's Params into its own
    # (Airflow merges them at construction), 60% of building a DAG, which the dag-processor
    # does for every task; the trigger and the task runner read the DAG's Params, not those.
    dag.params = ParamsDict(run_params(task, spec, algorithm, resource_spec))
    return dag


def build_all_dags(
    catalog_url: str | None = None, *, only_dag_id: str | None = None
) -> dict[str, DAG]:
    """One DAG per training task in the catalog, or only the DAG ``only_dag_id`` (if it is a
    training task's and the task exists): a task runner needs only the DAG it runs, so its
    start costs the same with 10 or 10,000 tasks in the catalog.

    Any error reading the catalog propagates: the DAG file then fails to import, which Airflow
    shows as an import error. Returning no DAGs instead would make Airflow deactivate every
    training task's DAG.
    """
    query = select(TrainingTask, Project.name).join(Project).order_by(TrainingTask.id)
    if only_dag_id is not None:
        try:
            query = query.where(TrainingTask.id == task_id_from_dag_id(only_dag_id))
        except ValueError:  # another DAG of this file's folder: no training task's
            return {}
    catalog = CatalogHook(catalog_url)
    try:
        with catalog.session() as session:
            rows = session.execute(query).all()
            project_ids = {task.project_id for task, _ in rows}
            algorithms = _by_project_and_name(session, Algorithm, project_ids)
            specs = _by_project_and_name(session, ResourceSpec, project_ids)
            defaults = airflow_dag_defaults()
            dags = {}
            for task, project in rows:
                spec = task.document
                dags[dag_id_for(task.id)] = build_task_dag(
                    task,
                    project,
                    spec=spec,
                    algorithm=algorithms.get((task.project_id, spec.algorithm)),
                    resource_spec=specs.get((task.project_id, spec.resource_spec)),
                    dag_defaults=defaults,
                )
            return dags
    finally:
        catalog.dispose()


def _by_project_and_name(
    session: Session, model: type, project_ids: set[int]
) -> dict[tuple[int, str], Any]:
    """Every row of ``model`` in those projects by (project id, name): one query for all the
    tasks' DAGs."""
    rows = session.scalars(select(model).where(model.project_id.in_(project_ids)))
    return {(row.project_id, row.name): row for row in rows}
