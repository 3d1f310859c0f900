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
triggerer follows the pod and watches the flag (``operators.kubernetes.node_pod_trigger``), so a
training holds no worker slot, and the task resumes on a worker only to fetch the training
container's log and end. Synchronous, the task follows the pod in its worker, watching the flag in a
thread (``AbortWatcher``).

A node whose pod is lost for a reason outside its training (evicted, preempted, its Kubernetes
node lost: ``octotrain.failure_classes``) asks for the run's next restart instead of raising
the flag, within the task's ``max_node_restarts`` (``octotrain.restarts``): its task deletes
the lost pod and creates the node's pod again, which restores the node's checkpoint before the
training starts; every other node's trigger (or, synchronous, its ``RestartWatcher``) sees the
request and takes its pod down with the grace period to save a checkpoint, and its task starts
it again too, as a rendezvous needs every member. A node that failed for want of its lost peer
joins the restart. A pod its Kubernetes node left behind (deleted when the node stopped
answering, but never gone: ``octotrain.left_behind_pods``) is deleted at once, and so lost
too. Each pod carries the number of the restart it belongs to (the label
``octotrain.io/start``), and each restarted start leaves a line for the node's supplemental
log (``collect_logs`` writes it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn

from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator
from airflow.providers.cncf.kubernetes.triggers.pod import KubernetesPodTrigger
from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException
from airflow.triggers.base import BaseTrigger
from kubernetes.client import ApiClient
from kubernetes.client import models as k8s
from kubernetes.client.exceptions import ApiException

from hooks.kubernetes.kubernetes_runs import KubernetesRuns
from hooks.kubernetes.pod_launcher import pod_run_files
from hooks.runs.run_abort import AbortWatcher, RunAbortMarker
from hooks.runs.run_restarts import RestartWatcher, RunRestarts
from octotrain.abort_flags import AbortFlag
from octotrain.contracts import NodeLogNames
from octotrain.failure_classes import FailureClass, pod_end_class, pod_loss
from octotrain.kubernetes_config import kubernetes_config
from octotrain.left_behind_pods import LEFT_BEHIND_CHECK_SECONDS, left_behind, left_behind_message
from octotrain.planning import RunPlan
from octotrain.pods import (
    VOLCANO_GROUP,
    VOLCANO_SCHEDULER,
    kueue_pod_group,
    node_pod,
    pod_group_name,
)
from octotrain.restarts import MAX_RUN_RESTARTS, RunRestart, restart_due, what_was_done
from octotrain.run_files import read_text
from octotrain.run_layout import RunObjects
from octotrain.settings import get_settings
from octotrain.supplemental_log import staging_error_in
from operators.hang_notices import PodHangWatch
from operators.kubernetes.node_pod_trigger import (
    HELD_SINCE,
    REFUSED,
    RESTART,
    RESTART_KEY,
    STOPPED,
    NodePodTrigger,
)
from operators.kubernetes.pod_settings import pod_settings
from operators.node_holds import pod_held_span, record_node_hold
from operators.restart_notes import note_restart
from operators.training_stage import PLAN_XCOM_KEY, VALIDATE_TASK_ID, say_where_the_training_logs

# The label of a node's pod with the number of the run's restart it belongs to (0: none).
LABEL_START = "octotrain.io/start"
# The pod's status reason when Kubernetes ended it at its activeDeadlineSeconds (a time limit).
DEADLINE_EXCEEDED = "DeadlineExceeded"
# A lost worker's node is tried again soon: its pod is still running.
RETRY_DELAY = timedelta(seconds=10)
# The status of the provider's trigger event for a pod that did not start in time.
STARTUP_TIMEOUT = "timeout"
# Where a launch task keeps its node's pod (name and namespace) in its task state store.
POD_STATE_KEY = "octotrain_node_pod"
NOT_FOUND = 404
# How long a pod may wait for its admission by a queue (Kueue) when its task sets no limit: a
# week, as a queue's wait is no failure.
QUEUED_WAIT_SECONDS = 7 * 24 * 3600


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
        self._start = 0  # the run's restart that this node's pod belongs to
        self._pod_name = ""  # the node's pod, once created or found (it may then be gone)
        self._restarts: RunRestarts | None = None
        self._max_restarts = 0
        self._objects: RunObjects | None = None

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
        # Masked: a secret reaches the pod from the run's Secret, never through its spec.
        plan = self._plan(context)
        assert plan.resources is not None
        self.pod_template_dict = node_pod(plan, self.node_index, pod_settings(plan.resources.spec))
        self.name = f"train-{plan.task_id}-{self.node_index}"
        if plan.max_wait_seconds is not None:  # how long the pod may wait to be scheduled
            self.schedule_timeout_seconds = plan.max_wait_seconds
        config = kubernetes_config()
        if config.admission and plan.max_wait_seconds is None:
            # Waiting in the queue for admission is no failure to start.
            self.schedule_timeout_seconds = QUEUED_WAIT_SECONDS
        pod = super().build_pod_request_obj(context, dry_run=dry_run)
        group_labels, group_annotations = kueue_pod_group(plan, config)
        pod.metadata.labels = {**(pod.metadata.labels or {}), LABEL_START: str(self._start),
                               **group_labels}  # fmt: skip
        pod.metadata.annotations = {**(pod.metadata.annotations or {}), **group_annotations}
        if config.admission == "volcano":  # one gang with the run's other pods
            pod.metadata.annotations[VOLCANO_GROUP] = pod_group_name(plan.task_id, plan.run_key)
            pod.spec.scheduler_name = VOLCANO_SCHEDULER
        return pod

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
        self._pod_name = str(found.metadata.name)
        self._start = int((found.metadata.labels or {}).get(LABEL_START, self._start))
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
        """Start the node's pod (or find it again) and follow it; start it again for each of
        the run's restarts that it takes part in."""
        try:
            return self._execute(context)
        except _StartAgain as again:
            return self._start_again(context, again.restart)

    def _execute(self, context: Context) -> Any:
        abort = self._abort_marker(context)
        already = abort.flag()
        if already is not None:
            # A stop recorded by an earlier try (its worker lost after the stop) stays.
            reason = abort.stopped_because(self.node_index) or already.why_stopped(
                self.node_index, started=False
            )
            abort.record_stop(self.node_index, reason)
            _end_stopped(reason)
        self._start = self._restart_book(context).latest()
        plan = self._plan(context)
        in_store = f"the pod's training container, then {plan.objects.logs}/ in the store"
        say_where_the_training_logs(self.log, plan, self.node_index, in_store)
        if self.deferrable:
            with self._failure_raises_the_flag(abort):
                return super().execute(context)
        hang_notices = self._hangs.notices(node_index=self.node_index, log=self.log)
        next_look = time.monotonic() + LEFT_BEHIND_CHECK_SECONDS

        def look() -> None:
            """At each look at the flag: the hang's notices, and now and then whether the pod
            was left behind by its node."""
            nonlocal next_look
            if hang_notices is not None:
                hang_notices()
            if time.monotonic() >= next_look:
                self._delete_if_left_behind()
                next_look = time.monotonic() + LEFT_BEHIND_CHECK_SECONDS

        watcher = AbortWatcher(
            abort, every=kubernetes_config().abort_check_seconds, on_flag=self._stop_for,
            on_look=look,
        )  # fmt: skip
        with self._failure_raises_the_flag(abort), watcher, self._restart_watcher():
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
            run_prefix=self._abort.objects.prefix,
            node_index=self.node_index,
            abort_check_seconds=kubernetes_config().abort_check_seconds,
            grace_seconds=self._grace_seconds,
            next_restart=self._next_restart,
            catalog_run_id=self._hangs.catalog_run_id,
            watch_hangs=self._hangs.watched,
        )
        kwargs = {**(kwargs or {}), "start": self._start}  # what trigger_reentry is told
        super().defer(trigger=watching, method_name=method_name, kwargs=kwargs, timeout=timeout)

    def trigger_reentry(self, context: Context, event: dict[str, Any], *, start: int = 0) -> Any:
        """Back from the trigger: a node the abort flag stopped (its trigger deleted the pod
        and recorded the stop) ends failed with its reason (who stopped it, or which node's
        end did); a run Kueue will never admit fails with Kueue's numbers; a node whose pod
        the run's restart took down (``start``: the restart its pod belonged to) starts it
        again; else the provider fetches the training container's log and ends as the pod did,
        a pod that failed (or did not start in time) raising the flag, or, lost, asking for
        the run's restart."""
        self._start, self._pod_name = start, str(event.get("name", ""))
        try:
            return self._reentry(context, event)
        except _StartAgain as again:
            return self._start_again(context, again.restart)

    def _reentry(self, context: Context, event: dict[str, Any]) -> Any:
        if event["status"] == RESTART:
            if event.get(HELD_SINCE):  # the pod is gone: its hold ends with this event
                since = datetime.fromisoformat(str(event[HELD_SINCE]))
                record_node_hold(self._plan(context), self.node_index, started_at=since,
                                 ended_at=datetime.now(UTC))  # fmt: skip
            restart = RunRestart.from_json(str(event[RESTART_KEY]))
            if restart is None:
                raise AirflowFailException(f"node {self.node_index}: an unreadable restart")
            self._restart_book(context)
            raise _StartAgain(restart)
        if event["status"] == STOPPED:
            if event.get(HELD_SINCE):  # the pod is gone: its hold ends with this event
                since = datetime.fromisoformat(str(event[HELD_SINCE]))
                record_node_hold(self._plan(context), self.node_index, started_at=since,
                                 ended_at=datetime.now(UTC))  # fmt: skip
            _end_stopped(str(event["message"]))
        if event["status"] == REFUSED:
            self._refused(context, str(event["message"]))
        if event["status"] == STARTUP_TIMEOUT:
            # No training log to fetch: following a pod that started just after its startup
            # timeout would hold this worker for its whole training (the provider follows it).
            self.get_logs = False
        abort = self._abort_marker(context)
        self._restart_book(context)
        with self._failure_raises_the_flag(abort):
            return super().trigger_reentry(context, event)

    def _refused(self, context: Context, reason: str) -> NoReturn:
        """Kueue will never admit the run: it fails with Kueue's numbers (the abort flag stops
        its other nodes), and this node's pod, which never ran, is deleted at once."""
        self._abort_marker(context).raise_flag(AbortFlag.node_failed(self.node_index, reason))
        runs = KubernetesRuns(conn_id=self.kubernetes_conn_id or "", namespace=str(self.namespace))
        runs.delete_pod(self._pod_name, grace_seconds=0)
        raise AirflowFailException(f"node {self.node_index}: {reason}")

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

    def _abort_marker(self, context: Context) -> RunAbortMarker:
        """The run's abort flag, kept for ``defer`` and ``on_kill`` (and its hang watch, for
        the watcher of the flag)."""
        plan = self._plan(context)
        self._abort = RunAbortMarker(pod_run_files(plan.objects))
        self._hangs = PodHangWatch.of(plan)
        return self._abort

    @contextmanager
    def _failure_raises_the_flag(self, abort: RunAbortMarker) -> Iterator[None]:
        """A node that fails ends the run: it raises the abort flag, unless the flag was up
        already (then this node was stopped: it says by whom or by what). Either way the training
        is not tried again."""
        try:
            yield
        except (AirflowFailException, AirflowSkipException, _StartAgain):
            raise
        except Exception as error:
            summary = str(error).splitlines()[0] if str(error) else type(error).__name__
            flag = abort.flag()
            restart = self._restart_after_failure() if flag is None else None
            if restart is not None:
                raise _StartAgain(restart) from error
            if flag is None:
                abort.raise_flag(AbortFlag.node_failed(self.node_index, f"failed ({summary})"))
            elif flag.by_user:
                reason = abort.stopped_because(self.node_index) or flag.why_stopped(self.node_index)
                raise AirflowFailException(reason) from error
            elif flag.concerns_other_than(self.node_index):
                summary = f"stopped: {flag.text()}"
            raise AirflowFailException(f"node {self.node_index}: {summary}") from error

    def _restart_book(self, context: Context) -> RunRestarts:
        """The run's restarts, and how many the task allows (kept for ``defer`` and the
        synchronous watcher)."""
        plan = self._plan(context)
        self._max_restarts, self._objects = plan.max_node_restarts, plan.objects
        self._restarts = RunRestarts(pod_run_files(plan.objects))
        return self._restarts

    @property
    def _next_restart(self) -> int | None:
        """The number of the run's restart that would take this node's pod down; None when no
        more can come (``MAX_RUN_RESTARTS``: a preemption's restart is not counted against the
        task's ``max_node_restarts``, so the next may come whatever their count)."""
        return self._start + 1 if self._start < MAX_RUN_RESTARTS else None

    def _restart_watcher(self) -> RestartWatcher:
        """Synchronous: the thread that takes the pod down when another node asks for the
        run's next restart."""
        assert self._restarts is not None
        return RestartWatcher(
            self._restarts, self._next_restart,
            every=kubernetes_config().abort_check_seconds, on_restart=self._take_down_for,
        )  # fmt: skip

    def _take_down_for(self, restart: RunRestart) -> None:
        if self.pod is None:
            return
        self.log.info("deleting the pod to start it again: node %s was lost", restart.node)
        runs = KubernetesRuns(conn_id=self.kubernetes_conn_id or "", namespace=str(self.namespace))
        runs.delete_pod(self.pod.metadata.name, grace_seconds=self._grace_seconds)

    def _delete_if_left_behind(self) -> None:
        """Synchronous: a pod its node left behind (``octotrain.left_behind_pods``) deleted at
        once; the provider, following it, then sees it gone, and the task takes it for lost."""
        if self.pod is None:
            return
        name = str(self.pod.metadata.name)
        try:
            pod = self.hook.get_pod(name, str(self.namespace))
        except Exception as error:  # gone, or the API briefly away: the provider's to see
            self.log.debug("could not read the pod: %s", error)
            return
        due = pod.metadata.deletion_timestamp
        if not left_behind(due, now=datetime.now(UTC)):
            return
        self.log.warning("%s", left_behind_message(name, due))
        runs = KubernetesRuns(conn_id=self.kubernetes_conn_id or "", namespace=str(self.namespace))
        try:
            runs.delete_pod(name, grace_seconds=0)
        except Exception as error:  # looked at again next time
            self.log.warning("could not delete the pod left behind: %s", error)

    def _pod_now(self) -> dict[str, Any] | None:
        """The node's pod as the API shows it now; None when it is gone."""
        try:
            pod = self.hook.get_pod(self._pod_name, str(self.namespace))
        except ApiException as error:
            if error.status != NOT_FOUND:
                raise
            return None
        return dict(ApiClient().sanitize_for_serialization(pod))

    def _restart_after_failure(self) -> RunRestart | None:
        """The run's restart that this node's failed pod takes part in: the one its loss asks
        for (``octotrain.failure_classes``: lost, within the task's limit), or the one another
        node asked for (this node then failed for want of its lost peer); None: it failed."""
        if self._restarts is None or not self._pod_name or self._next_restart is None:
            return None
        pod = self._pod_now()
        deadline = bool(pod) and (pod or {}).get("status", {}).get("reason") == DEADLINE_EXCEEDED
        staging_error = self._staging_error()
        failure = pod_end_class(
            pod, stopped=False, time_limited=deadline, staging_error=staging_error
        )
        counted = self._restarts.counted(self._start)
        if restart_due(failure, attempt=self._start, counted=counted,
                       max_restarts=self._max_restarts):  # fmt: skip
            why = "deleted before its end could be read: preempted, or its node lost"
            if pod is not None:
                store = f"its data preparation found the object store unreachable: {staging_error}"
                why = pod_loss(pod) or store
            restart = RunRestart(self._start + 1, self.node_index, why, counted=failure.counted)
            return self._restarts.request(restart)
        return self._restarts.requested(self._start + 1)

    def _staging_error(self) -> str | None:
        """Why the node's data preparation failed, as its init log in the store says."""
        assert self._restarts is not None and self._objects is not None
        names = NodeLogNames(task_id=self._objects.task_id, node_index=self.node_index)
        init_log = read_text(self._restarts.files, self._objects.log(names.init))
        return staging_error_in(init_log or "")

    def _start_again(self, context: Context, restart: RunRestart) -> Any:
        """Note how this start ended, for the supplemental log; retire its pod (whatever is
        left of it: marked checked, so that no try reattaches to it, and deleted); start the
        node's pod again."""
        assert self._restarts is not None
        counted = self._restarts.counted(restart.attempt)
        done = restart.in_words(self._max_restarts, counted_so_far=counted)
        if restart.node == self.node_index:
            failure = FailureClass.LOST if restart.counted else FailureClass.PREEMPTED
            before = counted - 1 if restart.counted else counted
            line = what_was_done(failure, attempt=before, max_restarts=self._max_restarts)
            how = "lost" if restart.counted else "preempted"
            ended = f"start {restart.attempt}: its pod was {how} ({restart.reason}); {line}"
            note_restart(self._plan(context), done, log=self.log)
        else:
            ended = f"start {restart.attempt}: stopped to be started again with every node"
        self._restarts.note(self.node_index, f"{ended}; {done}")
        self.log.warning("node %s: %s", self.node_index, done)
        self._retire_pod()
        # The provider builds and creates a pod only where it holds none.
        self.pod = self.pod_request_obj = self.remote_pod = None
        return self.execute(context)

    def _retire_pod(self) -> None:
        try:
            pod = self.hook.get_pod(self._pod_name, str(self.namespace))
        except ApiException as error:
            if error.status != NOT_FOUND:
                raise
            return
        self.patch_already_checked(pod, reraise=False)
        runs = KubernetesRuns(conn_id=self.kubernetes_conn_id or "", namespace=str(self.namespace))
        runs.delete_pod(self._pod_name, grace_seconds=self._grace_seconds)

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


class _StartAgain(Exception):
    """The node's pod ended for the run's restart ``restart``: its task starts it again."""

    def __init__(self, restart: RunRestart) -> None:
        super().__init__(f"restart {restart.attempt}")
        self.restart = restart


def _remember_pod(context: Context, *, name: str, namespace: str) -> None:
    """Keep the node's pod in the task instance's state store (``airflow.sdk``'s
    ``task_state_store``, which outlives a try), so that the next try finds it by name."""
    store = context.get("task_state_store")
    if store is not None:
        store.set(POD_STATE_KEY, {"name": name, "namespace": namespace})


def _end_stopped(reason: str) -> NoReturn:
    """End a node's task that the run's abort flag stopped, saying why (its user stopped the
    run, another node failed, or Airflow stopped a task instance): failed, never to be tried
    again. A user's stop fails it too: Airflow 3 has no "stopped" state, and a skipped node
    would show the stopped run as a green success in Airflow's grid (``stop_note``)."""
    raise AirflowFailException(reason)
