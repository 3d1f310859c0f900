"""Hang detection with the local launcher: a node that goes silent while its process lives is
reported (its sidecar log, its task's Airflow log) and, when its task asks for it, stopped as
hung with the grace to save a checkpoint, failing the run with the failure class ``hung``."""

from __future__ import annotations

import re
import sys

import pytest
from airflow.sdk.exceptions import AirflowException, AirflowSkipException

from hooks.runs.checkpoint_sync import read_manifest
from hooks.runs.run_abort import RunAbortMarker
from hooks.runs.run_files import FolderRunFiles
from hooks.storage.object_store import default_object_store
from octotrain.planning import RunPlan
from tests.operators.local.test_launch_local import NODE, launch, layout_of, plan, supplemental

__all__ = ["plan"]  # the fixture, shared with the launcher's other tests

# Silent for 3 s: a hang for a threshold of 1 s, which then ends by itself (steps every 0.2 s).
GOES_SILENT_THEN_ON = (
    "import time\nprint('epoch 0', flush=True)\ntime.sleep(3)\n"
    "for step in range(10):\n    print('step', step, flush=True); time.sleep(0.2)\n"
)
SAVES_ON_SIGTERM = (
    "import os, pathlib, signal, sys, time\n"
    "def save(*_):\n"
    "    folder = pathlib.Path(os.environ['CHECKPOINT'])\n"
    "    (folder / 'last.pt.tmp').write_bytes(b'state')\n"
    "    os.replace(folder / 'last.pt.tmp', folder / 'last.pt')\n"
    "    sys.exit(0)\n"
    "signal.signal(signal.SIGTERM, save)\n"
    "print('epoch 0', flush=True)\n"
    "time.sleep(60)\n"
)


def sidecar_log(plan: RunPlan) -> str:
    layout = layout_of(plan)
    return layout.log_path(layout.log_names(NODE).sidecar).read_text()


def test_a_silent_node_is_reported_and_goes_on_when_its_task_does_not_stop_it(
    plan: RunPlan, capsys: pytest.CaptureFixture[str]
) -> None:
    """The task's Airflow log (structlog, on stdout here) says it once, and when it ends."""
    watched = plan.model_copy(
        update={"command": [sys.executable, "-c", GOES_SILENT_THEN_ON], "hang_after_seconds": 1}
    )
    launch(watched)
    task_log = capsys.readouterr().out
    hung = re.findall(rf"\[warning *\] (node {NODE} looks hung: .*?\)) \[", task_log)
    assert len(hung) == 1, task_log
    assert re.fullmatch(
        rf"node {NODE} looks hung: its log and metrics did not advance for \d+ s while its "
        r"process was alive \(hang_detection.after_seconds: 1\)",
        hung[0],
    )
    assert f"node {NODE} advances again: no longer hung" in task_log
    log = sidecar_log(plan)
    assert "the training looks hung: its process is alive but its log and METRICS " in log
    assert "the training advanced again after " in log
    assert "stopping the hung training" not in log
    layout = layout_of(plan)
    assert not layout.log_path(layout.log_names(NODE).supplemental).exists()


def test_a_node_stopped_when_hung_saves_its_checkpoint_and_fails_as_hung(plan: RunPlan) -> None:
    stopped = plan.model_copy(
        update={
            "command": [sys.executable, "-c", SAVES_ON_SIGTERM],
            "hang_after_seconds": 1,
            "stop_when_hung": True,
        }
    )
    with pytest.raises(AirflowException) as failed:
        launch(stopped)
    assert not isinstance(failed.value, AirflowSkipException)
    reason = supplemental(plan)
    assert reason.startswith(f"node {NODE} was stopped as hung: its log and metrics did not ")
    assert reason.endswith(
        "while its process was alive (hang_detection.after_seconds: 1); it was sent SIGTERM and "
        "given the grace period to save a checkpoint"
    )
    assert str(failed.value) == reason
    layout = layout_of(plan)
    details = layout.log_path(layout.log_names(NODE).supplemental).read_text()
    assert "failure class hung: not retried" in details
    flag = RunAbortMarker(FolderRunFiles(layout)).flag()
    assert flag is not None and flag.node == NODE and not flag.stopped
    manifest = read_manifest(default_object_store(), plan.objects, NODE)
    assert manifest is not None and list(manifest.files) == ["last.pt"]
    assert "stopping the hung training (stop_when_hung)" in sidecar_log(plan)
