"""What every stage of a training run shares: the plan that ``validate`` resolved, and where
the run's files are."""

from __future__ import annotations

from logging import Logger
from typing import Any
from urllib.parse import quote

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowSkipException
from airflow.sdk.log import mask_secret

from hooks.launchers import configured_launcher
from hooks.storage.catalog import default_catalog
from octotrain.contracts import dag_id_for
from octotrain.planning import RunPlan
from octotrain.run_files import RunFiles
from octotrain.run_layout import RunLayout
from octotrain.run_lifecycle import run_secrets
from octotrain.settings import get_settings

VALIDATE_TASK_ID = "validate"
PLAN_XCOM_KEY = "plan"


class TrainingStageOperator(BaseOperator):
    """A stage of the run of training task ``training_task_id``."""

    def __init__(self, *, training_task_id: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.training_task_id = training_task_id

    def run_plan(self, context: Context) -> RunPlan:
        """The plan ``validate`` pushed for this run; skip if validation never produced one."""
        document = context["ti"].xcom_pull(task_ids=VALIDATE_TASK_ID, key=PLAN_XCOM_KEY)
        if not document:
            raise AirflowSkipException("validate produced no plan for this run")
        return RunPlan.model_validate(document)

    def plan_to_start_nodes(self, context: Context) -> RunPlan:
        """The plan with its secrets' real values (``with_real_secrets``)."""
        return with_real_secrets(self.run_plan(context))

    @staticmethod
    def layout(plan: RunPlan) -> RunLayout:
        return RunLayout(
            runs_dir=get_settings().runs_dir, task_id=plan.task_id, run_key=plan.run_key
        )

    @classmethod
    def run_files(cls, plan: RunPlan, *, live: bool = True) -> RunFiles:
        """Where the run's files are, as the configured launcher says: ``live`` while its
        nodes may still write them (after ``collect_logs``, not)."""
        return configured_launcher().run_files(cls.layout(plan), live=live)


def with_real_secrets(plan: RunPlan) -> RunPlan:
    """``plan`` with its secrets' real values, which Airflow's copy masks: only for the
    stages that start nodes (the values reach the training's environment and arguments)."""
    if not plan.has_secrets:
        return plan
    with default_catalog().session() as session:
        secrets = run_secrets(session, plan.catalog_run_id)
    # Should any of them reach the task's log after all, Airflow writes *** in its place.
    for values in secrets.values():
        for value in values.values():
            mask_secret(str(value))
    return plan.with_secrets(secrets)


def say_where_the_training_logs(log: Logger, plan: RunPlan, node_index: str, where: str) -> None:
    """A line in a launch task's log that says where the training's own output is (that log
    holds the stage's, not the training's): ``where`` the file is, the run's Logs tab in
    Airflow and the command that prints it."""
    names = RunLayout(get_settings().runs_dir, plan.task_id, plan.run_key).log_names(node_index)
    run = quote(plan.run_id, safe="")
    dag = f"{get_settings().airflow_api_url.rstrip('/')}/dags/{dag_id_for(plan.task_id)}"
    log.info(
        "node %s: the training's own output is %s (%s); read it on this run's Logs tab "
        "(%s/runs/%s/plugin/octotrain-logs) or with `octotrain task logs %s --run %s "
        "--node %s`",
        node_index, names.train, where, dag, run, plan.task_id, plan.catalog_run_id, node_index,
    )  # fmt: skip
