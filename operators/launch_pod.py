"""``launch`` with the Kubernetes launcher: the cncf.kubernetes provider's
``KubernetesPodOperator``, one mapped task instance per node, each running its node's pod
(``octotrain.pods``). The operator's own machinery is kept: it creates the pod, follows the
training container's log into the task log, and deletes the pod on success. A failed pod is
kept for ``collect_logs`` to diagnose (its status and events) before deleting it.

After a worker is lost (a restart), the task's next try reattaches to the node's pod, found by
its task-instance labels whatever its phase, so no second pod is created and nothing it wrote
is lost. A training that fails is not retried (``AirflowFailException``).

A node that fails raises the run's abort flag (in the object store), and so does a user's stop;
every node's task watches the flag and deletes its own pod (with the grace period) when it goes
up: a distributed job cannot go on without one of its members. A node that has not started
when the flag is up does not start.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator
from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException
from kubernetes.client import models as k8s

from hooks.kubernetes_runs import KubernetesRuns
from hooks.object_store import default_object_store
from hooks.run_abort import AbortWatcher, StoreAbortMarker
from octotrain.abort_flags import AbortFlag
from octotrain.kubernetes_config import kubernetes_config
from octotrain.planning import RunPlan
from octotrain.pods import node_pod, run_prefix
from octotrain.settings import get_settings
from operators.pod_settings import pod_settings
from operators.training_stage import PLAN_XCOM_KEY, VALIDATE_TASK_ID

# A lost worker's node is tried again soon: its pod is still running.
RETRY_DELAY = timedelta(seconds=10)


class LaunchNodePodOperator(KubernetesPodOperator):
    """Run node ``node_index`` of the run as a pod and wait for it."""

    template_fields = (*KubernetesPodOperator.template_fields, "node_index")
    ui_color = "#fdf1e2"

    def __init__(self, *, training_task_id: int, node_index: str, **kwargs: Any) -> None:
        settings, config = get_settings(), kubernetes_config()
        kwargs.setdefault("kubernetes_conn_id", settings.kubernetes_conn_id)
        kwargs.setdefault("namespace", settings.kubernetes_namespace)
        kwargs.setdefault("startup_timeout_seconds", config.startup_timeout_seconds)
        kwargs.setdefault("startup_check_interval_seconds", config.startup_check_interval_seconds)
        kwargs["retries"], kwargs["retry_delay"] = config.launch_retries, RETRY_DELAY
        super().__init__(
            name=f"train-{training_task_id}",
            get_logs=True,
            log_events_on_failure=True,
            log_pod_spec_on_failure=False,
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

    def get_or_create_pod(self, pod_request_obj: k8s.V1Pod, context: Context) -> k8s.V1Pod:
        """This node's pod of an earlier try of this task, whatever its phase (the provider
        would replace a pod that ended meanwhile, training again), or a new one."""
        found = self._get_pod_from_task_state_store(context) or self.find_pod(
            str(pod_request_obj.metadata.namespace), context=context
        )
        if found is None:
            return super().get_or_create_pod(pod_request_obj, context)
        self.log.info("reattaching to pod %s of node %s", found.metadata.name, self.node_index)
        self._persist_pod_identity_to_task_state_store(context, found)
        return found

    def execute(self, context: Context) -> Any:
        plan = self._plan(context)
        abort = StoreAbortMarker(default_object_store(), run_prefix(plan))
        already = abort.flag()
        if already is not None:
            reason = already.why_stopped(self.node_index, started=False)
            abort.record_stop(self.node_index, reason)
            raise AirflowFailException(reason)
        self._abort = abort
        watcher = AbortWatcher(
            abort, every=kubernetes_config().abort_check_seconds, on_flag=self._stop_for
        )
        try:
            with watcher:
                return super().execute(context)
        except Exception as error:
            summary = str(error).splitlines()[0] if str(error) else type(error).__name__
            flag = abort.flag()
            if flag is None:
                abort.raise_flag(AbortFlag.node_failed(self.node_index, f"failed ({summary})"))
            elif flag.concerns_other_than(self.node_index):
                summary = f"stopped: {flag.text()}"
            raise AirflowFailException(f"node {self.node_index}: {summary}") from error

    def _stop_for(self, flag: AbortFlag) -> None:
        """The abort flag went up: unless this node raised it, delete its pod."""
        if not flag.concerns_other_than(self.node_index) or self.pod is None:
            return
        reason = flag.why_stopped(self.node_index)
        self.log.info("deleting the pod: %s", reason)
        self._abort.record_stop(self.node_index, reason)
        runs = KubernetesRuns(conn_id=self.kubernetes_conn_id or "", namespace=str(self.namespace))
        runs.delete_pod(self.pod.metadata.name, grace_seconds=self.termination_grace_period or 30)

    def on_kill(self) -> None:
        """The task instance is being stopped (in Airflow, or it timed out): the run stops."""
        abort = getattr(self, "_abort", None)
        if abort is not None:
            flag = AbortFlag.stopped_by_airflow(self.node_index)
            abort.record_stop(self.node_index, flag.why_stopped(self.node_index))
            abort.raise_flag(flag)
        super().on_kill()
