"""``launch`` with the local launcher: one mapped task instance per node, one process each.

Before it starts, a node is held to its resource spec's memory and given its task's uid as far
as this machine allows (``hooks/local/node_confinement``; what was done goes to its init log). A
node that does not end normally fails its task instance, writes its supplemental log and, unless it
was stopped, raises the run's abort flag, upon which every other node of the run is stopped
(and says so in its own supplemental log), as a distributed job cannot go on without one of its
members. A node its user stopped (``octotrain task stop``, the API, the console) writes its
supplemental log too but skips its task instance, saying who stopped it: a stop is no failure,
in Airflow as in the catalog.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from hooks.local import local_admission
from hooks.local.local_process import AGENT_DIR, LocalNodeProcess, NodeOutcome, NodeStartFailed
from hooks.local.node_confinement import Confinement, confine_node
from hooks.runs.checkpoint_sync import BackgroundCheckpointSync, CheckpointSync, left_checkpoint
from hooks.runs.run_abort import RunAbortMarker
from hooks.runs.run_progress import phase_sink, record_phase
from hooks.runs.run_restarts import RunRestarts
from hooks.storage.object_store import default_object_store
from octotrain.abort_flags import AbortFlag
from octotrain.contracts import NodeFolders, parameter_arguments, training_environment
from octotrain.failure_classes import FailureClass, local_end_class
from octotrain.metric_definitions import extraction_arguments
from octotrain.metrics_meta import meta_report
from octotrain.node_progress import Phase, wrapper_arguments
from octotrain.planning import RunPlan
from octotrain.restarts import RunRestart, restart_due, what_was_done
from octotrain.run_files import RunFiles
from octotrain.run_layout import RunLayout
from octotrain.secrets import masked_text
from octotrain.settings import get_settings
from octotrain.supplemental_log import TAIL_READ_BYTES, NodeEnding, last_sampled_memory
from operators.hang_notices import HangNotices
from operators.local.admission_trigger import RunAdmissionTrigger
from operators.local.node_endings import record_ending
from operators.local.stage_data import init_log
from operators.node_holds import record_node_hold, record_node_release
from operators.restart_notes import note_restart
from operators.training_stage import TrainingStageOperator, say_where_the_training_logs

# How much of the train log's end is read to tell an allocation failure (RLIMIT_AS).


class LaunchLocalNodeOperator(TrainingStageOperator):
    """Run node ``node_index`` of the run as a local process and wait for it."""

    template_fields = ("node_index",)
    ui_color = "#fdf1e2"

    def __init__(self, *, node_index: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.node_index = node_index
        self._process: LocalNodeProcess | None = None
        self._layout: RunLayout | None = None
        self._files: RunFiles | None = None
        self._confinement: Confinement | None = None
        self._plan: RunPlan | None = None  # for usage: the node's hold is the run's
        self._stopped_by_airflow: AbortFlag | None = None
        self._watching = False  # execute is waiting for the node (it will see it end)
        self._restart: RunRestart | None = None  # another node's, which stopped this start
        self._earlier: list[str] = []  # how earlier starts ended, for the supplemental log

    def execute(self, context: Context) -> int:
        plan = self.plan_to_start_nodes(context)
        layout = self._layout = self.layout(plan)
        settings = get_settings()
        names = layout.log_names(self.node_index)
        files = self._files = self.run_files(plan)
        abort = RunAbortMarker(files)
        already = abort.flag()
        if already is not None:
            reason = already.why_stopped(self.node_index, started=False)
            ending = NodeEnding(self.node_index, stop_reason=reason)
            return self._finish(layout, ending, stopped_by=already)
        if plan.catalog_run_id and not local_admission.may_go_on(plan.catalog_run_id):
            self._wait_for_admission(plan)
        folders = layout.create_node_folders(self.node_index, with_model=bool(plan.input_models))
        command = [*plan.command, *parameter_arguments(plan.parameters)]
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
        self._confinement = self._confine(plan, layout, command, path)
        env = training_environment(
            folders=folders,
            task_id=plan.task_id,
            run_id=plan.run_id,
            node_index=self.node_index,
            world_size=plan.world_size,
            master_addr=plan.master_addr,
            master_port=plan.master_port,
            algorithm_env=plan.env,
            with_model=bool(plan.input_models),
            with_code=plan.code is not None,
        )
        if self._confinement.memory_limit_mib > 0:  # the resource monitor's memory %
            env["OCTOTRAIN_MEMORY_LIMIT_BYTES"] = str(self._confinement.memory_limit_mib << 20)
        new_process = partial(
            LocalNodeProcess,
            command=command,
            env=env,
            cwd=working_folder(plan, folders),
            train_log=layout.log_path(names.train),
            sidecar_log=layout.log_path(names.sidecar),
            resources=layout.resources_path(self.node_index),
            exit_file=layout.exit_path(self.node_index),
            stop_grace_seconds=settings.stop_grace_seconds,
            max_training_seconds=plan.max_training_seconds,
            confinement=self._confinement.wrapper_arguments(),
            metric_extraction=extraction_arguments(plan.metric_extraction),
            hang_after_seconds=plan.hang_after_seconds,
            stop_when_hung=plan.stop_when_hung,
            progress=wrapper_arguments(
                phase_file=str(layout.phase_path(self.node_index)),
                progress_file=str(layout.progress_path(self.node_index)),
            ),
        )
        restarts = RunRestarts(files)
        attempt = 0
        while True:  # once, and again for each restart of the run (octotrain.restarts)
            self._process = new_process()
            layout.exit_path(self.node_index).unlink(missing_ok=True)  # an earlier start's
            try:
                pid = self._process.start()
            except NodeStartFailed as error:
                return self._finish(layout, NodeEnding(self.node_index, start_error=str(error)))
            self.log.info("node %s started as pid %s (start %s)", self.node_index, pid, attempt + 1)
            if attempt == 0:
                say_where_the_training_logs(
                    self.log, plan, self.node_index, f"in {layout.logs_dir}"
                )
                self._plan = plan
                record_node_hold(plan, self.node_index, started_at=datetime.now(UTC))
            outcome = self._train(plan, layout, abort, restarts.requested, attempt)
            stopped_by = outcome.stopped_by or self._stopped_by_airflow
            ending = self._ending(layout, outcome, stopped_by=stopped_by)
            restart = self._next_restart(plan, layout, outcome, restarts, attempt, stopped_by)
            if restart is None:
                failure = self._failure_class(layout, ending, outcome, stopped_by)
                done = None
                if failure is not None:
                    most = plan.max_node_restarts
                    done = what_was_done(failure, attempt=attempt, max_restarts=most)
                return self._finish(layout, ending, stopped_by=stopped_by, failure=done)
            self._record_restart(plan, layout, ending, restart, outcome, stopped_by=stopped_by)
            attempt = restart.attempt

    @property
    def _run_files(self) -> RunFiles:
        """The run's files, known once ``execute`` has begun."""
        assert self._files is not None
        return self._files

    def execute_admitted(self, context: Context, event: dict[str, Any] | None = None) -> int:
        """The run was admitted (or ended) while this task was deferred: start over."""
        return self.execute(context)

    def _wait_for_admission(self, plan: RunPlan) -> None:
        """Defer until the run is admitted: all its nodes start together, or none does."""
        state = local_admission.state_of(plan.catalog_run_id)
        why = state.place.reason if state and state.place else ""
        self.log.info("node %s waits for the run's admission%s", self.node_index,
                      f": {why}" if why else "")  # fmt: skip
        self.defer(
            trigger=RunAdmissionTrigger(
                run_id=plan.catalog_run_id, settles=self.node_index == plan.node_indices[0]
            ),
            method_name="execute_admitted",
        )

    def _train(
        self,
        plan: RunPlan,
        layout: RunLayout,
        abort: RunAbortMarker,
        requested: Callable[[int], RunRestart | None],
        attempt: int,
    ) -> NodeOutcome:
        """Wait for the started node to end, syncing its checkpoints; stop it (SIGTERM, the
        grace period to save a checkpoint) when another node asks for the run's next restart,
        which is then ``self._restart``."""
        assert self._process is not None
        process, hang_notices = self._process, self._hang_notices(plan)
        self._restart = None

        def on_poll() -> None:
            if hang_notices is not None:
                hang_notices()
            if self._restart is None and attempt < plan.max_node_restarts:
                self._restart = requested(attempt + 1)
                if self._restart is not None:
                    self.log.info("stopping node %s: %s", self.node_index,
                                  self._restart.in_words(plan.max_node_restarts))  # fmt: skip
                    process.terminate()

        checkpoints = self._checkpoint_sync(plan, layout)
        checkpoints.start()
        self._watching = True
        try:
            return process.wait(abort, on_poll=on_poll)
        finally:
            self._watching = False
            checkpoints.finish()

    def _failure_class(
        self,
        layout: RunLayout,
        ending: NodeEnding,
        outcome: NodeOutcome,
        stopped_by: AbortFlag | None,
    ) -> FailureClass | None:
        """The class of the node's abnormal end (``octotrain.failure_classes``); None when it
        ended well."""
        if outcome.succeeded and stopped_by is None and ending.time_limit is None:
            return None
        return local_end_class(
            exit_code=outcome.exit_code,
            wrapper_reported=layout.exit_path(self.node_index).is_file(),
            stopped=stopped_by is not None,
            out_of_memory=ending.out_of_memory is not None,
            time_limited=ending.time_limit is not None,
            hung=ending.hung is not None,
            start_error=ending.start_error is not None,
        )

    def _next_restart(
        self,
        plan: RunPlan,
        layout: RunLayout,
        outcome: NodeOutcome,
        restarts: RunRestarts,
        attempt: int,
        stopped_by: AbortFlag | None,
    ) -> RunRestart | None:
        """The run's restart this node now takes part in: the one another node asked for (this
        node was stopped for it, or failed for want of its lost peer), or the one its own loss
        asks for within the task's limit; None when it is done (or the run is stopped)."""
        if stopped_by is not None:
            return None
        if self._restart is not None:
            return self._restart
        ending = self._ending(layout, outcome, stopped_by=None)
        failure = self._failure_class(layout, ending, outcome, None)
        if failure is None:
            return None
        # A local node is never preempted: each restart counts.
        if restart_due(failure, attempt=attempt, counted=attempt,
                       max_restarts=plan.max_node_restarts):  # fmt: skip
            reason = f"its process was killed from outside, exit status {outcome.exit_code}"
            return restarts.request(RunRestart(attempt + 1, self.node_index, reason))
        return restarts.requested(attempt + 1) if attempt < plan.max_node_restarts else None

    def _record_restart(
        self,
        plan: RunPlan,
        layout: RunLayout,
        ending: NodeEnding,
        restart: RunRestart,
        outcome: NodeOutcome,
        *,
        stopped_by: AbortFlag | None,
    ) -> None:
        """Say in the node's supplemental and sidecar logs how this start ended and that it is
        started again; the supplemental log keeps these lines whatever the next start does."""
        done = restart.in_words(plan.max_node_restarts)
        failure = self._failure_class(layout, ending, outcome, stopped_by)
        if restart.node == self.node_index and self._restart is None and failure is not None:
            attempt, most = restart.attempt - 1, plan.max_node_restarts
            lines = (what_was_done(failure, attempt=attempt, max_restarts=most), done)
            note_restart(plan, done, log=self.log)
        else:
            ending = NodeEnding(
                self.node_index,
                exit_code=outcome.exit_code,
                stop_reason=(
                    f"node {self.node_index} was stopped to be started again with every node of "
                    f"the run, as node {restart.node} was lost"
                ),
            )
            lines = (done,)
        reason = record_ending(self._run_files, ending, details=(*self._earlier, *lines))
        self._earlier.append(f"start {restart.attempt} of the node: {reason}; {done}")
        with layout.log_path(layout.log_names(self.node_index).sidecar).open("a") as log:
            log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {done}\n")
        self.log.info("node %s: %s", self.node_index, done)

    def _hang_notices(self, plan: RunPlan) -> HangNotices | None:
        if self._process is None or plan.hang_after_seconds is None:
            return None
        return HangNotices(
            node_index=self.node_index,
            catalog_run_id=plan.catalog_run_id,
            read=self._process.hung,
            log=self.log,
        )

    def _checkpoint_sync(self, plan: RunPlan, layout: RunLayout) -> BackgroundCheckpointSync:
        """What the pod's sidecar does for ``CHECKPOINT``, from this task's process; noted in
        the node's sidecar log, as in a pod."""
        sidecar_log = layout.log_path(layout.log_names(self.node_index).sidecar)

        def note(message: str) -> None:
            with sidecar_log.open("a", encoding="utf-8") as log:
                log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {message}\n")

        return BackgroundCheckpointSync(
            CheckpointSync(
                default_object_store(),
                objects=plan.objects,
                run_id=plan.run_id,
                node_index=self.node_index,
                folder=layout.node_folders(self.node_index).checkpoint,
                every_seconds=get_settings().checkpoint_sync_seconds,
                note=note,
            )
        )

    def _confine(
        self, plan: RunPlan, layout: RunLayout, command: list[str], path: str
    ) -> Confinement:
        """Decide how the node is held to its spec and its uid here, and say so in its init
        log (what the machine does not allow included)."""
        assert plan.resources is not None
        confinement = confine_node(
            name=f"octotrain-{plan.task_id}-{plan.run_key}-{self.node_index}",
            memory_mib=plan.resources.memory_mib,
            gpu_count=plan.resources.gpu_count,
            uid=plan.run_as_uid,
            container_user=plan.container_user,
            command=command,
            path=path,
            code_dir=working_folder(plan, layout.node_folders(self.node_index)),
            agent_dir=AGENT_DIR,
            folders=layout.node_folders(self.node_index),
        )
        with init_log(layout, self.node_index) as note:
            for line in confinement.notes:
                note(line)
        return confinement

    def _ending(
        self, layout: RunLayout, outcome: NodeOutcome, *, stopped_by: AbortFlag | None
    ) -> NodeEnding:
        """What the supplemental log says: a stop names who stopped the node (``stopped_by``:
        the run's flag, or Airflow through ``on_kill``), and an out-of-memory end the limit."""
        memory = None
        tail = _tail(layout.log_path(layout.log_names(self.node_index).train))
        if self._confinement is not None:
            samples = layout.resources_path(self.node_index)
            memory = self._confinement.out_of_memory(
                outcome.exit_code,
                tail,
                last_sampled_memory(samples.read_text() if samples.is_file() else ""),
            )
        return NodeEnding(
            self.node_index,
            exit_code=outcome.exit_code,
            stop_reason=stopped_by.why_stopped(self.node_index) if stopped_by else None,
            start_error=outcome.start_error,
            killed_after_grace_seconds=outcome.killed_after_grace_seconds,
            out_of_memory=memory,
            time_limit=outcome.time_limit,
            hung=outcome.hung,
            train_log_tail=self._masked(tail),
            checkpoint_synced=self._plan is not None
            and left_checkpoint(default_object_store(), self._plan.objects, [self.node_index]),
        )

    def _masked(self, text: str) -> str:
        """``text`` with the run's secret values masked (the plan this node started with)."""
        if self._plan is None:
            return text
        secrets = self._plan.secret_values()
        return masked_text(text, [*secrets["env"].values(), *secrets["parameters"].values()])

    def _finish(
        self,
        layout: RunLayout,
        ending: NodeEnding,
        *,
        stopped_by: AbortFlag | None = None,
        failure: str | None = None,
    ) -> int:
        """Record how the node ended (with ``failure``, its class and what was done about it,
        and how its earlier starts ended, if it was restarted); a node that did not end
        normally fails its task instance (its failure, unless it was stopped, stops the run),
        but one that its user stopped (``stopped_by``) skips it, without a traceback in its
        log: nothing went wrong."""
        if self._confinement is not None:
            self._confinement.release()
        if self._plan is not None:
            record_node_release(self._plan, self.node_index)
            _settle_admissions()  # this node's room may admit a waiting run
        record_phase(phase_sink(self._run_files, self.node_index), Phase.DONE)
        report = meta_report(layout.node_folders(self.node_index).metrics)
        if report:
            with layout.log_path(layout.log_names(self.node_index).sidecar).open("a") as log:
                log.write("".join(f"{line}\n" for line in report))
        done = (failure,) if failure else ()
        reason = record_ending(self._run_files, ending, details=(*self._earlier, *done))
        if reason is None:
            self.log.info("node %s finished successfully", self.node_index)
            return 0
        if ending.stop_reason is None:
            failure = reason.removeprefix(f"node {self.node_index} ")
            RunAbortMarker(self._run_files).raise_flag(
                AbortFlag.node_failed(self.node_index, failure)
            )
        elif stopped_by is not None and stopped_by.by_user:
            # Failed, not retried: a stopped run is a failed DAG run in Airflow (``stop_note``).
            raise AirflowFailException(reason)
        raise AirflowException(reason)

    def on_kill(self) -> None:
        """Airflow is stopping this task instance (marked failed, timed out): the whole run
        stops, and this node's supplemental log says Airflow stopped it, written before the
        node is even signalled, as Airflow kills this process a few seconds later whatever it
        is doing. Called in a signal handler while ``execute`` waits for the node: that wait
        sees the flag and the node's end, and records it. Called after a timeout interrupted
        ``execute``: nobody else will, so this waits for the node's end and records it."""
        if self._process is None or self._layout is None or self._files is None:
            return
        flag = AbortFlag.stopped_by_airflow(self.node_index)
        self._stopped_by_airflow = flag
        RunAbortMarker(self._files).raise_flag(flag)
        stop_reason = flag.why_stopped(self.node_index)
        record_ending(self._files, NodeEnding(self.node_index, stop_reason=stop_reason))
        self._process.terminate()
        if self._watching:
            return
        self._process.stop()
        outcome = self._process.wait(RunAbortMarker(self._files))
        ending = self._ending(self._layout, outcome, stopped_by=outcome.stopped_by or flag)
        record_ending(self._files, ending)
        if self._confinement is not None:
            self._confinement.release()
        if self._plan is not None:
            record_node_release(self._plan, self.node_index)


def _settle_admissions() -> None:
    """Admit the runs that fit now; a failure is logged, not the node's (triggers settle too)."""
    try:
        local_admission.settle()
    except Exception:
        logging.getLogger(__name__).warning("settling admissions failed", exc_info=True)


def _tail(path: Path) -> str:
    """The end of a log file, as text."""
    try:
        with path.open("rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - TAIL_READ_BYTES))
            return log.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def working_folder(plan: RunPlan, folders: NodeFolders) -> Path:
    """Where the command runs: in ``CODE`` when the algorithm has uploaded code; else in the
    configured code folder (``local_code_dir``), whose files an image-only algorithm's
    command names."""
    return folders.code if plan.code is not None else get_settings().local_code_dir
