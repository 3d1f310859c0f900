"""``launch`` with the local launcher: one mapped task instance per node, one process each.

A node that exits non-zero fails its task instance, writes its supplemental log and raises the
run's abort flag, upon which every other node of the run is stopped (and says so in its own
supplemental log), as a distributed job cannot go on without one of its members.
"""

from __future__ import annotations

import time
from typing import Any

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowException

from hooks.local_process import LocalNodeProcess, NodeOutcome, RunAbortMarker
from octotrain.abort_flags import AbortFlag
from octotrain.contracts import parameter_arguments, training_environment
from octotrain.exit_codes import describe_exit_code
from octotrain.metrics_meta import meta_report
from octotrain.run_layout import RunLayout
from octotrain.settings import get_settings
from operators.training_stage import TrainingStageOperator


class LaunchLocalNodeOperator(TrainingStageOperator):
    """Run node ``node_index`` of the run as a local process and wait for it."""

    template_fields = ("node_index",)
    ui_color = "#fdf1e2"

    def __init__(self, *, node_index: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.node_index = node_index
        self._process: LocalNodeProcess | None = None
        self._layout: RunLayout | None = None

    def execute(self, context: Context) -> int:
        plan = self.run_plan(context)
        layout = self._layout = self.layout(plan)
        settings = get_settings()
        names = layout.log_names(self.node_index)
        abort = RunAbortMarker(layout.run_dir)
        already = abort.reason()
        if already is not None:
            self._finish(layout, NodeOutcome(exit_code=-1, stopped_because=already))
        folders = layout.node_folders(self.node_index)
        folders.create()
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
        self._process = LocalNodeProcess(
            command=[*plan.command, *parameter_arguments(plan.parameters)],
            env=env,
            cwd=settings.local_code_dir,
            train_log=layout.log_path(names.train),
            sidecar_log=layout.log_path(names.sidecar),
            resources=layout.resources_path(self.node_index),
            stop_grace_seconds=settings.stop_grace_seconds,
        )
        pid = self._process.start()
        self.log.info("node %s started as pid %s", self.node_index, pid)
        outcome = self._process.wait(abort)
        return self._finish(layout, outcome)

    def _finish(self, layout: RunLayout, outcome: NodeOutcome) -> int:
        report = meta_report(layout.node_folders(self.node_index).metrics)
        if report:
            with layout.log_path(layout.log_names(self.node_index).sidecar).open("a") as log:
                log.write("".join(f"{line}\n" for line in report))
        layout.write_outcome(
            self.node_index,
            {"exit_code": outcome.exit_code, "stopped_because": outcome.stopped_because},
        )
        if outcome.succeeded:
            self.log.info("node %s finished successfully", self.node_index)
            return outcome.exit_code
        if outcome.stopped_because is None:
            RunAbortMarker(layout.run_dir).raise_flag(
                AbortFlag.node_failed(self.node_index, f"failed with exit code {outcome.exit_code}")
            )
        raise AirflowException(write_supplemental(layout, self.node_index, outcome))

    def on_kill(self) -> None:
        """Airflow is killing this task instance (user stop, timeout): stop the node too."""
        if self._process is None or self._layout is None:
            return
        code = self._process.stop()
        flag = AbortFlag.stopped_by_airflow(self.node_index)
        self._layout.write_outcome(
            self.node_index, {"exit_code": code, "stopped_because": flag.text()}
        )
        RunAbortMarker(self._layout.run_dir).raise_flag(flag)
        write_supplemental(self._layout, self.node_index, NodeOutcome(code, flag.text()))


def write_supplemental(layout: RunLayout, node_index: str, outcome: NodeOutcome) -> str:
    """Write the node's supplemental log (abnormal end or stop only); return its summary."""
    text = _supplemental_text(node_index, outcome)
    layout.log_path(layout.log_names(node_index).supplemental).write_text(text, encoding="utf-8")
    return text.splitlines()[1]


def _supplemental_text(node_index: str, outcome: NodeOutcome) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    if outcome.stopped_because is not None:
        summary = f"node {node_index} was stopped: {outcome.stopped_because}"
    else:
        summary = f"node {node_index} ended abnormally with exit code {outcome.exit_code}"
    lines = [f"{stamp} abnormal end of node {node_index}", summary]
    if outcome.exit_code >= 0:
        lines.append(f"exit code {outcome.exit_code}: {describe_exit_code(outcome.exit_code)}")
    else:
        lines.append("the training process was never started")
    return "\n".join(lines) + "\n"
