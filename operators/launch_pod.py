"""``launch`` with the Kubernetes launcher: the cncf.kubernetes provider's
``KubernetesPodOperator``, one mapped task instance per node, each running its node's pod
(``octotrain.pods``). The operator's own machinery is kept: it creates the pod, follows the
training container's log into the task log, and deletes the pod on success. A failed pod is
kept for ``collect_logs`` to diagnose (its status and events) before deleting it.

After a worker is lost (a restart), the task's next try reattaches to the node's pod, whatever
its phase: found by the name an earlier try kept in the task instance's state store
(``airflow.sdk``'s ``task_state_store``), else by its task-instance labels (the provider's
``find_pod``), so no second pod is created and nothing it wrote is lost. A training that
fails is not retried (``AirflowFailException``).

A node that fails raises the run's abort flag (in the object store), and so does a user's stop;
every node watches the flag and deletes its own pod (with the grace period) when it goes up: a
distributed job cannot go on without one of its members. A node that has not started when the
flag is up does not start. Nodes stopped because another failed, or because Airflow stopped a
task instance, fail; nodes their user stopped skip their task instance, saying who stopped it
(no traceback: a stop is no failure, in Airflow as in the catalog).

By default (``deferrable`` in ``config/kubernetes.toml``) a task creates its pod and defers: the
triggerer follows the pod and watches the flag (``operators.node_pod_trigger``), so a training
holds no worker slot, and the task resumes on a worker only to fetch the training container's
log and end. Synchronous, the task follows the pod in its worker, watching the flag in a thread
(``AbortWatcher``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn

from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator
from airflow.providers.cncf.kubernetes.triggers.pod import KubernetesPodTrigger
from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException
from airflow.triggers.base import BaseTrigger
from kubernetes.client import models as k8s
from kubernetes.client.exceptions import ApiException

from hooks.kubernetes_runs import KubernetesRuns
from hooks.object_store import default_object_store
from hooks.run_abort import AbortWatcher, StoreAbortMarker
from octotrain.abort_flags import AbortFlag
from octotrain.kubernetes_config import kubernetes_config
from octotrain.planning import RunPlan
from octotrain.pods import node_pod
from octotrain.settings import get_settings
from operators.hang_notices import PodHangWatch
from operators.node_holds import pod_held_span, record_node_hold
from operators.node_pod_trigger import HELD_SINCE, STOPPED, STOPPED_BY_USER, NodePodTrigger
from operators.pod_settings import pod_settings
from operators.training_stage import PLAN_XCOM_KEY, VALIDATE_TASK_ID, with_real_secrets

# A lost worker's node is tried again soon: its pod is still running.
RETRY_DELAY = timedelta(seconds=10)
# The status of the provider's trigger event for a pod that did not start in time.
STARTUP_TIMEOUT = "timeout"
# Where a launch task keeps its node's pod (name and namespace) in its task state store.
POD_STATE_KEY = "octotrain_node_pod"
NOT_FOUND = 404


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
        kwargs.setdefault("poll_interval", config.pod_poll_seconds)
        kwargs.setdefault("deferrable", config.deferrable)
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
        plan = with_real_secrets(self._plan(context))
        assert plan.resources is not None
        self.pod_template_dict = node_pod(plan, self.node_index, pod_settings(plan.resources.spec))
        self.name = f"train-{plan.task_id}-{self.node_index}"
        if plan.max_wait_seconds is not None:  # how long the pod may wait to be scheduled
            self.schedule_timeout_seconds = plan.max_wait_seconds
        return super().build_pod_request_obj(context, dry_run=dry_run)

    def get_or_create_pod(self, pod_request_obj: k8s.V1Pod, context: Context) -> k8s.V1Pod:
        """This node's pod of an earlier try of this task, whatever its phase (the provider
        would replace a pod that ended meanwhile, training again), or a new one."""
        namespace = str(pod_request_obj.metadata.namespace)
        found = self._remembered_pod(context) or self.find_pod(namespace, context=context)
        if found is None:
            found = super().get_or_create_pod(pod_request_obj, context)
        else:
            self.log.info("reattaching to pod %s of node %s", found.metadata.name, self.node_index)
        _remember_pod(context, name=str(found.metadata.name), namespace=namespace)
        return found

    def _remembered_pod(self, context: Context) -> k8s.V1Pod | None:
        """The pod an earlier try of this task remembered in its task state store, unless it is
        gone or a try already finished with it (the provider's ``already_checked`` label): a
        pod found by name, even where its task-instance labels no longer match."""
        store = context.get("task_state_store")
        remembered = store.get(POD_STATE_KEY) if store is not None else None
        if not isinstance(remembered, dict):
            return None
        try:
            pod = self.hook.get_pod(str(remembered["name"]), str(remembered["namespace"]))
        except ApiException as error:
            if error.status != NOT_FOUND:
                raise
            return None
        if (pod.metadata.labels or {}).get(self.POD_CHECKED_KEY) == "True":
            return None
        return pod

    def execute(self, context: Context) -> Any:
        abort = self._abort_marker(context)
        already = abort.flag()
        if already is not None:
            # A stop recorded by an earlier try (its worker lost after the stop) stays.
            reason = abort.stopped_because(self.node_index) or already.why_stopped(
                self.node_index, started=False
            )
            abort.record_stop(self.node_index, reason)
            _end_stopped(reason, by_user=already.by_user)
        if self.deferrable:
            with self._failure_raises_the_flag(abort):
                return super().execute(context)
        watcher = AbortWatcher(
            abort,
            every=kubernetes_config().abort_check_seconds,
            on_flag=self._stop_for,
            on_look=self._hangs.notices(node_index=self.node_index, log=self.log),
        )
        with self._failure_raises_the_flag(abort), watcher:
            return super().execute(context)

    def defer(
        self,
        *,
        trigger: BaseTrigger,
        method_name: str,
        kwargs: dict[str, Any] | None = None,
        timeout: timedelta | int | float | None = None,
    ) -> NoReturn:
        """The provider defers to its ``KubernetesPodTrigger``, which follows the pod; the
        node's trigger runs it and also watches the run's abort flag."""
        assert isinstance(trigger, KubernetesPodTrigger), trigger
        watching = NodePodTrigger.around(
            trigger,
            run_prefix=self._abort.prefix,
            node_index=self.node_index,
            abort_check_seconds=kubernetes_config().abort_check_seconds,
            grace_seconds=self._grace_seconds,
            catalog_run_id=self._hangs.catalog_run_id,
            watch_hangs=self._hangs.watched,
        )
        super().defer(trigger=watching, method_name=method_name, kwargs=kwargs, timeout=timeout)

    def trigger_reentry(self, context: Context, event: dict[str, Any]) -> Any:
        """Back from the trigger: a node the abort flag stopped (its trigger deleted the pod
        and recorded the stop) ends with its reason, skipped when its user stopped it, failed
        otherwise; else the provider fetches the training container's log and ends as the pod
        did, a pod that failed (or did not start in time) raising the flag."""
        if event["status"] == STOPPED:
            if event.get(HELD_SINCE):  # the pod is gone: its hold ends with this event
                since = datetime.fromisoformat(str(event[HELD_SINCE]))
                record_node_hold(self._plan(context), self.node_index, started_at=since,
                                 ended_at=datetime.now(UTC))  # fmt: skip
            _end_stopped(str(event["message"]), by_user=bool(event.get(STOPPED_BY_USER)))
        if event["status"] == STARTUP_TIMEOUT:
            # No training log to fetch: following a pod that started just after its startup
            # timeout would hold this worker for its whole training (the provider follows it).
            self.get_logs = False
        abort = self._abort_marker(context)
        with self._failure_raises_the_flag(abort):
            return super().trigger_reentry(context, event)

    def cleanup(
        self,
        pod: k8s.V1Pod,
        remote_pod: k8s.V1Pod,
        xcom_result: dict[str, Any] | None = None,
        context: Context | None = None,
    ) -> None:
        """The pod has ended, as the provider followed it (before it deletes a pod that
        succeeded): its hold is recorded from its own status, for usage accounting."""
        span = pod_held_span(remote_pod) if remote_pod is not None else None
        if span is not None and context is not None:
            record_node_hold(self._plan(context), self.node_index, started_at=span[0],
                             ended_at=span[1])  # fmt: skip
        super().cleanup(pod, remote_pod, xcom_result=xcom_result, context=context)

    def _abort_marker(self, context: Context) -> StoreAbortMarker:
        """The run's abort flag, kept for ``defer`` and ``on_kill`` (and its hang watch, for
        the watcher of the flag)."""
        plan = self._plan(context)
        self._abort = StoreAbortMarker(default_object_store(), plan.objects.prefix)
        self._hangs = PodHangWatch.of(plan)
        return self._abort

    @contextmanager
    def _failure_raises_the_flag(self, abort: StoreAbortMarker) -> Iterator[None]:
        """A node that fails ends the run: it raises the abort flag, unless the flag was up
        already (then this node was stopped: skipped if by its user). Either way the training
        is not tried again."""
        try:
            yield
        except (AirflowFailException, AirflowSkipException):
            raise
        except Exception as error:
            summary = str(error).splitlines()[0] if str(error) else type(error).__name__
            flag = abort.flag()
            if flag is None:
                abort.raise_flag(AbortFlag.node_failed(self.node_index, f"failed ({summary})"))
            elif flag.by_user:
                reason = abort.stopped_because(self.node_index) or flag.why_stopped(self.node_index)
                raise AirflowSkipException(reason) from error
            elif flag.concerns_other_than(self.node_index):
                summary = f"stopped: {flag.text()}"
            raise AirflowFailException(f"node {self.node_index}: {summary}") from error

    @property
    def _grace_seconds(self) -> int:
        return self.termination_grace_period or 30

    def _stop_for(self, flag: AbortFlag) -> None:
        """The abort flag went up: unless this node raised it, delete its pod."""
        if not flag.concerns_other_than(self.node_index) or self.pod is None:
            return
        reason = flag.why_stopped(self.node_index)
        self.log.info("deleting the pod: %s", reason)
        self._abort.record_stop(self.node_index, reason)
        runs = KubernetesRuns(conn_id=self.kubernetes_conn_id or "", namespace=str(self.namespace))
        runs.delete_pod(self.pod.metadata.name, grace_seconds=self._grace_seconds)

    def on_kill(self) -> None:
        """The task instance is being stopped (in Airflow, or it timed out): the run stops."""
        abort = getattr(self, "_abort", None)
        if abort is not None:
            flag = AbortFlag.stopped_by_airflow(self.node_index)
            abort.record_stop(self.node_index, flag.why_stopped(self.node_index))
            abort.raise_flag(flag)
        super().on_kill()


def _remember_pod(context: Context, *, name: str, namespace: str) -> None:
    """Keep the node's pod in the task instance's state store (``airflow.sdk``'s
    ``task_state_store``, which outlives a try), so that the next try finds it by name."""
    store = context.get("task_state_store")
    if store is not None:
        store.set(POD_STATE_KEY, {"name": name, "namespace": namespace})


def _end_stopped(reason: str, *, by_user: bool) -> NoReturn:
    """End a node's task that the run's abort flag stopped: skipped when its user stopped the
    run (no failure, no traceback in its log), failed otherwise (another node failed, or
    Airflow stopped a task instance), never to be tried again."""
    if by_user:
        raise AirflowSkipException(reason)
    raise AirflowFailException(reason)
