"""``launch`` with the Kubernetes launcher: the cncf.kubernetes provider's
``KubernetesPodOperator``, one mapped task instance per node, each running its node's pod
(``octotrain.pods``). The operator's own machinery is kept: it creates the pod, follows the
training container's log into the task log, reattaches to a running pod after a worker or
scheduler restart (no second pod), and deletes the pod on success. A failed pod is kept for
``collect_logs`` to diagnose (its status and events) before deleting it.

A node that fails raises the run's abort flag (in the object store) and stops the other
nodes' pods: a distributed job cannot go on without one of its members. A node that has not
started when the flag is up does not start.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator
from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowException
from kubernetes.client import models as k8s

from hooks.kubernetes_runs import KubernetesRuns
from hooks.object_store import default_object_store
from hooks.run_abort import StoreAbortMarker
from octotrain.kubernetes_config import kubernetes_config
from octotrain.planning import RunPlan
from octotrain.pods import LABEL_NODE, LABEL_RUN, node_pod, run_label, run_prefix
from octotrain.settings import get_settings
from operators.pod_settings import pod_settings
from operators.training_stage import PLAN_XCOM_KEY, VALIDATE_TASK_ID

STOPPED_BY_USER = "was stopped (its task instance was stopped in Airflow)"


class LaunchNodePodOperator(KubernetesPodOperator):
    """Run node ``node_index`` of the run as a pod and wait for it."""

    template_fields = (*KubernetesPodOperator.template_fields, "node_index")
    ui_color = "#fdf1e2"

    def __init__(self, *, training_task_id: int, node_index: str, **kwargs: Any) -> None:
        settings = get_settings()
        kwargs.setdefault("kubernetes_conn_id", settings.kubernetes_conn_id)
        kwargs.setdefault("namespace", settings.kubernetes_namespace)
        kwargs.setdefault("startup_timeout_seconds", kubernetes_config().startup_timeout_seconds)
        super().__init__(
            name=f"train-{training_task_id}",
            get_logs=True,
            log_events_on_failure=True,
            on_finish_action="delete_succeeded_pod",
            termination_grace_period=int(settings.stop_grace_seconds),
            **kwargs,
        )
        self.training_task_id = training_task_id
        self.node_index = node_index

    def _plan(self, context: Context) -> RunPlan:
        document = context["ti"].xcom_pull(task_ids=VALIDATE_TASK_ID, key=PLAN_XCOM_KEY)
        return RunPlan.model_validate(document)

    def build_pod_request_obj(
        self, context: Context | None = None, *, dry_run: bool = False
    ) -> k8s.V1Pod:
        """The node's pod (``octotrain.pods``) as the operator's pod template: the operator
        then adds its own labels, which let it find the pod again after a restart."""
        if context is None:
            raise AirflowException("the pod of a node is built from its run's plan (a context)")
        plan = self._plan(context)
        assert plan.resources is not None
        self.pod_template_dict = node_pod(plan, self.node_index, pod_settings(plan.resources.spec))
        self.name = f"train-{plan.task_id}-{self.node_index}"
        return super().build_pod_request_obj(context, dry_run=dry_run)

    def execute(self, context: Context) -> Any:
        plan = self._plan(context)
        abort = StoreAbortMarker(default_object_store(), run_prefix(plan))
        already = abort.reason()
        if already is not None:
            raise AirflowException(f"node {self.node_index} was not started: {already}")
        self._abort = abort
        try:
            return super().execute(context)
        except Exception as error:
            if abort.reason() is None:
                abort.raise_flag(node_index=self.node_index, reason=f"failed: {error}"[:500])
                self._stop_other_nodes(plan)
            raise

    def _stop_other_nodes(self, plan: RunPlan) -> None:
        runs = KubernetesRuns(conn_id=self.kubernetes_conn_id or "", namespace=str(self.namespace))
        for pod in runs.pods({LABEL_RUN: run_label(plan)}):
            if pod["metadata"]["labels"].get(LABEL_NODE) != self.node_index:
                self.log.info("stopping %s: node %s failed", pod["metadata"]["name"],
                              self.node_index)  # fmt: skip
                runs.delete_pod(
                    pod["metadata"]["name"], grace_seconds=self.termination_grace_period or 30
                )

    def on_kill(self) -> None:
        """The task instance is being stopped (a user stopped the run, or a timeout)."""
        abort = getattr(self, "_abort", None)
        if abort is not None:
            abort.raise_flag(node_index=self.node_index, reason=STOPPED_BY_USER)
        super().on_kill()
