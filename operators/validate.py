"""``validate``: check the task against the catalog as it is now and resolve the run's plan."""

from __future__ import annotations

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowFailException

from hooks.catalog import default_catalog
from hooks.local_process import free_port
from octotrain.catalog.models import TrainingTask
from octotrain.errors import InvalidInput
from octotrain.kubernetes_config import kubernetes_config
from octotrain.mount_volumes import mount_volumes
from octotrain.planning import RunPlan, build_run_plan
from octotrain.pods import master_address
from octotrain.run_lifecycle import record_validated
from octotrain.settings import get_settings
from operators.training_stage import PLAN_XCOM_KEY, TrainingStageOperator

LOCAL_MASTER_ADDR = "127.0.0.1"
# Runs that start by themselves train on each dataset input's newest published version.
SELF_STARTED_RUN_TYPES = frozenset({"scheduled", "asset_triggered"})


def check_mount_volume(plan: RunPlan) -> None:
    """On Kubernetes, resource mounts come from the volume the resource spec names."""
    if not plan.mounts or plan.resources is None:
        return
    volume, known = plan.resources.mount_volume, mount_volumes()
    if not volume:
        raise InvalidInput.one(
            "resource_spec",
            f"'{plan.resources.spec}' names no mount_volume, so the task's mounts cannot be "
            "mounted on Kubernetes (set one of config/mount_volumes.toml on the spec)",
        )
    if volume not in known:
        raise InvalidInput.one(
            "resource_spec",
            f"mount_volume '{volume}' of '{plan.resources.spec}' is not in "
            f"config/mount_volumes.toml (it has: {', '.join(sorted(known)) or 'none'})",
        )


def _with_rendezvous(plan: RunPlan) -> RunPlan:
    """Where node 0 listens: this machine and a free port (local launcher), or node 0's pod
    by its DNS name under the run's Service and the configured port (Kubernetes)."""
    settings = get_settings()
    if settings.launcher == "kubernetes":
        check_mount_volume(plan)
        address = master_address(plan, settings.kubernetes_namespace)
        port = kubernetes_config().master_port
    else:
        address, port = LOCAL_MASTER_ADDR, free_port()
    return plan.model_copy(update={"master_addr": address, "master_port": port})


class ValidateTaskOperator(TrainingStageOperator):
    """Fails the run, naming every missing or unusable reference, before anything is staged.

    On success it records the run in the catalog, pushes the plan for the later stages (XCom
    key ``plan``) and returns the node list that ``launch`` is mapped over.
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
                plan = _with_rendezvous(
                    build_run_plan(
                        session,
                        task,
                        run_id=run_id,
                        master_addr=LOCAL_MASTER_ADDR,
                        master_port=0,
                        triggered_by=triggered_by,
                        conf=dag_run.conf or {},
                        trigger=run_type,
                        newest_data=run_type in SELF_STARTED_RUN_TYPES,
                    )
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
