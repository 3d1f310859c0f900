"""``validate``: check the task against the catalog as it is now and resolve the run's plan."""

from __future__ import annotations

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowFailException

from hooks.launchers import configured_launcher
from hooks.storage.catalog import default_catalog
from octotrain.catalog.models import TrainingTask
from octotrain.errors import InvalidInput
from octotrain.planning import build_run_plan
from octotrain.run_lifecycle import held_secrets, record_validated
from octotrain.secrets import with_held_secrets
from operators.training_stage import PLAN_XCOM_KEY, TrainingStageOperator

# Runs that start by themselves train on each dataset input's newest published version.
SELF_STARTED_RUN_TYPES = frozenset({"scheduled", "asset_triggered"})


class ValidateTaskOperator(TrainingStageOperator):
    """Fails the run, naming every missing or unusable reference, before anything is staged.

    On success it records the run in the catalog, pushes the plan for the later stages (XCom
    key ``plan``) and returns the node list that ``launch`` is mapped over.

    The plan is built once, node 0's address from the configured launcher included
    (``build_run_plan``'s ``rendezvous``). Its ``catalog_run_id`` is set after: the catalog's
    row is written with the judged plan (``record_validated``) and, for a run that Octotrain's
    trigger did not record as queued (scheduled, asset-triggered, triggered in Airflow itself),
    does not exist before, so its id is known only then. The catalog's copy of the plan keeps
    ``catalog_run_id`` 0 (the row is its own id); the stages' copy (XCom) has it.
    """

    ui_color = "#e8f1fb"

    def execute(self, context: Context) -> list[str]:
        dag_run = context["dag_run"]
        run_id = dag_run.run_id
        triggered_by = str(getattr(dag_run, "triggering_user_name", None) or "")
        run_type = str(getattr(dag_run.run_type, "value", dag_run.run_type))
        with default_catalog().session() as session:
            task = session.get(TrainingTask, self.training_task_id)
            if task is None:
                raise AirflowFailException(
                    f"training task {self.training_task_id} no longer exists in the catalog"
                )
            try:
                plan = build_run_plan(
                    session,
                    task,
                    run_id=run_id,
                    # Asked once the plan is resolved (its rules come first, as they did).
                    rendezvous=lambda resolved: configured_launcher().rendezvous(resolved),
                    triggered_by=triggered_by,
                    # Secrets typed for this run wait in the catalog, not in Airflow's conf.
                    conf=with_held_secrets(
                        dag_run.conf or {}, held_secrets(session, task.id, run_id)
                    ),
                    trigger=run_type,
                    newest_data=run_type in SELF_STARTED_RUN_TYPES,
                )
                error = None
            except InvalidInput as problem:
                plan, error = None, problem
            run_row_id = record_validated(
                session,
                task.id,
                run_id,
                triggered_by=triggered_by,
                trigger=run_type,
                node_count=plan.world_size if plan else task.document.node_count,
                plan=plan.shown() if plan else {},
                refused=str(error) if error else None,
                secrets=plan.secret_values() if plan else {},
                resumed_from=plan.resumed_from_run_id or None if plan else None,
            ).id
        if error is not None:
            raise AirflowFailException(
                f"training task '{task.name}' cannot run: "
                + "; ".join(str(problem) for problem in error.problems)
            )
        assert plan is not None
        plan = plan.model_copy(update={"catalog_run_id": run_row_id})
        # Masked as in the catalog: Airflow shows XCom to whoever may see the run.
        context["ti"].xcom_push(key=PLAN_XCOM_KEY, value=plan.shown())
        self.log.info("run %s of task %s: nodes %s", run_id, task.name, plan.node_indices)
        return plan.node_indices
