"""``launch`` with the local launcher: one mapped task instance per node, one process each.

Before it starts, a node is held to its resource spec's memory and given its task's uid as far
as this machine allows (``hooks/node_confinement``; what was done goes to its init log). A node
that does not end normally fails its task instance, writes its supplemental log and, unless it
was stopped, raises the run's abort flag, upon which every other node of the run is stopped
(and says so in its own supplemental log), as a distributed job cannot go on without one of its
members. A node its user stopped (``octotrain task stop``, the API, the console) writes its
supplemental log too but skips its task instance, saying who stopped it: a stop is no failure,
in Airflow as in the catalog.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowException, AirflowSkipException

from hooks.checkpoint_sync import BackgroundCheckpointSync, CheckpointSync
from hooks.local_process import (
    AGENT_DIR,
    LocalNodeProcess,
    NodeOutcome,
    NodeStartFailed,
    RunAbortMarker,
)
from hooks.node_confinement import Confinement, confine_node
from hooks.object_store import default_object_store
from octotrain.abort_flags import AbortFlag
from octotrain.contracts import parameter_arguments, training_environment
from octotrain.metric_definitions import extraction_arguments
from octotrain.metrics_meta import meta_report
from octotrain.planning import RunPlan
from octotrain.run_layout import RunLayout
from octotrain.settings import get_settings
from octotrain.supplemental_log import NodeEnding, last_sampled_memory
from operators.hang_notices import HangNotices
from operators.node_endings import record_ending
from operators.node_holds import record_node_hold, record_node_release
from operators.stage_data import init_log
from operators.training_stage import TrainingStageOperator

# How much of the train log's end is read to tell an allocation failure (RLIMIT_AS).
TRAIN_LOG_TAIL_BYTES = 64 * 1024


class LaunchLocalNodeOperator(TrainingStageOperator):
    """Run node ``node_index`` of the run as a local process and wait for it."""

    template_fields = ("node_index",)
    ui_color = "#fdf1e2"

    def __init__(self, *, node_index: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.node_index = node_index
        self._process: LocalNodeProcess | None = None
        self._layout: RunLayout | None = None
        self._confinement: Confinement | None = None
        self._plan: RunPlan | None = None  # for usage: the node's hold is the run's
        self._stopped_by_airflow: AbortFlag | None = None
        self._watching = False  # execute is waiting for the node (it will see it end)

    def execute(self, context: Context) -> int:
        plan = self.plan_to_start_nodes(context)
        layout = self._layout = self.layout(plan)
        settings = get_settings()
        names = layout.log_names(self.node_index)
        abort = RunAbortMarker(layout.run_dir)
        already = abort.flag()
        if already is not None:
            reason = already.why_stopped(self.node_index, started=False)
            ending = NodeEnding(self.node_index, stop_reason=reason)
            return self._finish(layout, ending, stopped_by=already)
        folders = layout.node_folders(self.node_index)
        folders.create()
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
        )
        if self._confinement.memory_limit_mib > 0:  # the resource monitor's memory %
            env["OCTOTRAIN_MEMORY_LIMIT_BYTES"] = str(self._confinement.memory_limit_mib << 20)
        self._process = LocalNodeProcess(
            command=command,
            env=env,
            cwd=settings.local_code_dir,
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
        )
        try:
            pid = self._process.start()
        except NodeStartFailed as error:
            return self._finish(layout, NodeEnding(self.node_index, start_error=str(error)))
        self.log.info("node %s started as pid %s", self.node_index, pid)
        self._plan = plan
        record_node_hold(plan, self.node_index, started_at=datetime.now(UTC))
        checkpoints = self._checkpoint_sync(plan, layout)
        checkpoints.start()
        self._watching = True
        try:
            outcome = self._process.wait(abort, on_poll=self._hang_notices(plan))
        finally:
            self._watching = False
            checkpoints.finish()
        stopped_by = outcome.stopped_by or self._stopped_by_airflow
        ending = self._ending(layout, outcome, stopped_by=stopped_by)
        return self._finish(layout, ending, stopped_by=stopped_by)

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
            code_dir=get_settings().local_code_dir,
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
        if self._confinement is not None:
            samples = layout.resources_path(self.node_index)
            memory = self._confinement.out_of_memory(
                outcome.exit_code,
                _tail(layout.log_path(layout.log_names(self.node_index).train)),
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
        )

    def _finish(
        self, layout: RunLayout, ending: NodeEnding, *, stopped_by: AbortFlag | None = None
    ) -> int:
        """Record how the node ended; a node that did not end normally fails its task instance
        (its failure, unless it was stopped, stops the run), but one that its user stopped
        (``stopped_by``) skips it, without a traceback in its log: nothing went wrong."""
        if self._confinement is not None:
            self._confinement.release()
        if self._plan is not None:
            record_node_release(self._plan, self.node_index)
        report = meta_report(layout.node_folders(self.node_index).metrics)
        if report:
            with layout.log_path(layout.log_names(self.node_index).sidecar).open("a") as log:
                log.write("".join(f"{line}\n" for line in report))
        reason = record_ending(layout, ending)
        if reason is None:
            self.log.info("node %s finished successfully", self.node_index)
            return 0
        if ending.stop_reason is None:
            failure = reason.removeprefix(f"node {self.node_index} ")
            RunAbortMarker(layout.run_dir).raise_flag(
                AbortFlag.node_failed(self.node_index, failure)
            )
        elif stopped_by is not None and stopped_by.by_user:
            raise AirflowSkipException(reason)
        raise AirflowException(reason)

    def on_kill(self) -> None:
        """Airflow is stopping this task instance (marked failed, timed out): the whole run
        stops, and this node's supplemental log says Airflow stopped it, written before the
        node is even signalled, as Airflow kills this process a few seconds later whatever it
        is doing. Called in a signal handler while ``execute`` waits for the node: that wait
        sees the flag and the node's end, and records it. Called after a timeout interrupted
        ``execute``: nobody else will, so this waits for the node's end and records it."""
        if self._process is None or self._layout is None:
            return
        flag = AbortFlag.stopped_by_airflow(self.node_index)
        self._stopped_by_airflow = flag
        RunAbortMarker(self._layout.run_dir).raise_flag(flag)
        stop_reason = flag.why_stopped(self.node_index)
        record_ending(self._layout, NodeEnding(self.node_index, stop_reason=stop_reason))
        self._process.terminate()
        if self._watching:
            return
        self._process.stop()
        outcome = self._process.wait(RunAbortMarker(self._layout.run_dir))
        ending = self._ending(self._layout, outcome, stopped_by=outcome.stopped_by or flag)
        record_ending(self._layout, ending)
        if self._confinement is not None:
            self._confinement.release()
        if self._plan is not None:
            record_node_release(self._plan, self.node_index)


def _tail(path: Path) -> str:
    """The end of a log file, as text."""
    try:
        with path.open("rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - TRAIN_LOG_TAIL_BYTES))
            return log.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
