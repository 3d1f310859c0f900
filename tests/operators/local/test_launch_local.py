"""A node's launch task with the local launcher (``operators.local.launch_local``) when the run's
abort flag stops it: its user's stop skips the task, saying who stopped it (Airflow then counts no
failure and logs no traceback), while a node stopped because another failed fails its task as
before; either way its supplemental log says why."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

from hooks.runs.checkpoint_sync import read_manifest
from hooks.runs.run_abort import RunAbortMarker
from hooks.runs.run_files import FolderRunFiles
from hooks.storage.object_store import default_object_store
from octotrain.abort_flags import AbortFlag
from octotrain.planning import NodeResources, RunPlan
from octotrain.run_layout import RunLayout
from octotrain.settings import get_settings
from operators.local.launch_local import LaunchLocalNodeOperator

NODE = "single-0"
TRAINS = "import time\nprint('epoch 0', flush=True)\ntime.sleep(60)\n"
# Far longer than a node takes to start and to stop on a busy machine.
DEADLINE_SECONDS = 60


class _TaskInstance:
    def __init__(self, plan: RunPlan) -> None:
        self.plan = plan

    def xcom_pull(self, *, task_ids: str, key: str) -> dict[str, Any]:
        return self.plan.model_dump(mode="json")


@pytest.fixture
def plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunPlan]:
    """A one-node run whose training prints an epoch and trains for a minute."""
    monkeypatch.setenv("OCTOTRAIN_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("OCTOTRAIN_STOP_GRACE_SECONDS", "5")
    get_settings.cache_clear()
    yield RunPlan.model_validate(
        {
            "task_id": 3, "task_name": "t", "project": "p", "run_id": "manual__r",
            "run_key": "r-1", "node_indices": [NODE], "master_addr": "127.0.0.1",
            "master_port": 29500, "image": "i", "command": [sys.executable, "-c", TRAINS],
            "parameters": {}, "env": {}, "run_as_user": "1000",
            "resources": NodeResources(spec="s", kind="cpu", cpu=1, memory_mib=512, gpu_count=0),
            "data_inputs": [], "input_models": [], "mounts": [], "output_repository_id": 1,
            "output_repository": "m", "lineage": {},
        }
    )  # fmt: skip
    get_settings.cache_clear()


def launch(plan: RunPlan) -> None:
    layout_of(plan).logs_dir.mkdir(parents=True, exist_ok=True)  # as stage_data leaves it
    operator = LaunchLocalNodeOperator(task_id="launch", training_task_id=3, node_index=NODE)
    operator.execute({"ti": _TaskInstance(plan)})  # type: ignore[arg-type]


def layout_of(plan: RunPlan) -> RunLayout:
    return RunLayout(get_settings().runs_dir, plan.task_id, plan.run_key)


def supplemental(plan: RunPlan) -> str:
    layout = layout_of(plan)
    return layout.log_path(layout.log_names(NODE).supplemental).read_text().splitlines()[0]


def test_a_node_its_user_stopped_while_it_trained_fails_saying_who(plan: RunPlan) -> None:
    layout = layout_of(plan)
    train_log = layout.log_path(layout.log_names(NODE).train)

    def stop_once_training() -> None:
        deadline = time.monotonic() + DEADLINE_SECONDS
        while not (train_log.is_file() and "epoch 0" in train_log.read_text()):
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)
        RunAbortMarker(FolderRunFiles(layout)).raise_flag(AbortFlag.stopped_by("alice"))

    stopper = threading.Thread(target=stop_once_training, daemon=True)
    stopper.start()
    with pytest.raises(AirflowFailException, match=rf"^node {NODE} was stopped by alice$"):
        launch(plan)
    stopper.join()
    assert supplemental(plan) == f"node {NODE} was stopped by alice"


def test_a_node_not_started_after_its_user_s_stop_fails_saying_who(plan: RunPlan) -> None:
    RunAbortMarker(FolderRunFiles(layout_of(plan))).raise_flag(AbortFlag.stopped_by("alice"))
    with pytest.raises(AirflowFailException) as stopped:
        launch(plan)
    assert str(stopped.value) == f"node {NODE} was not started: the run was stopped by alice"
    assert supplemental(plan) == str(stopped.value)


@pytest.mark.parametrize(
    ("flag", "reason"),
    [
        (
            AbortFlag.node_failed("distributed-0", "failed with exit code 3"),
            f"node {NODE} was not started because node distributed-0 failed with exit code 3",
        ),
        (
            AbortFlag.stopped_by_airflow("distributed-0"),
            f"node {NODE} was not started because node distributed-0 was stopped by Airflow "
            "(its task instance was stopped or timed out)",
        ),
    ],
)
def test_a_node_stopped_by_another_s_failure_or_by_airflow_still_fails(
    plan: RunPlan, flag: AbortFlag, reason: str
) -> None:
    RunAbortMarker(FolderRunFiles(layout_of(plan))).raise_flag(flag)
    with pytest.raises(AirflowException) as failed:
        launch(plan)
    assert not isinstance(failed.value, AirflowSkipException)
    assert str(failed.value) == reason == supplemental(plan)


def test_what_a_node_writes_to_checkpoint_is_in_the_store_when_it_ends(plan: RunPlan) -> None:
    saves = (
        "import os, pathlib\n"
        "folder = pathlib.Path(os.environ['CHECKPOINT'])\n"
        "(folder / 'step-10.pt.tmp').write_bytes(b'weights')\n"
        "os.replace(folder / 'step-10.pt.tmp', folder / 'step-10.pt')\n"
    )
    launch(plan.model_copy(update={"command": [sys.executable, "-c", saves]}))
    layout = layout_of(plan)
    manifest = read_manifest(default_object_store(), plan.objects, NODE)
    assert manifest is not None and list(manifest.files) == ["step-10.pt"]
    assert manifest.run_id == plan.run_id
    sidecar_log = layout.log_path(layout.log_names(NODE).sidecar).read_text()
    assert "checkpoint synced: 1 files" in sidecar_log


def test_a_node_over_its_training_time_limit_saves_its_checkpoint_then_fails_the_run(
    plan: RunPlan,
) -> None:
    """SIGTERM at the limit, the grace period to save a checkpoint (synced at the end), then a
    failed node whose supplemental log names the limit, and the run's abort flag up."""
    saves_on_sigterm = (
        "import os, pathlib, signal, sys, time\n"
        "def save(*_):\n"
        "    folder = pathlib.Path(os.environ['CHECKPOINT'])\n"
        "    (folder / 'last.pt.tmp').write_bytes(b'state')\n"
        "    os.replace(folder / 'last.pt.tmp', folder / 'last.pt')\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, save)\n"
        "time.sleep(60)\n"
    )
    limited = plan.model_copy(
        update={"command": [sys.executable, "-c", saves_on_sigterm], "max_training_seconds": 1}
    )
    with pytest.raises(AirflowException) as failed:
        launch(limited)
    assert not isinstance(failed.value, AirflowSkipException)
    assert supplemental(plan) == (
        "node single-0 reached its time limit: it trained for more than 1 s "
        "(max_training_seconds); it was sent SIGTERM and given the grace period to save a "
        "checkpoint"
    )
    flag = RunAbortMarker(FolderRunFiles(layout_of(plan))).flag()
    assert flag is not None and flag.node == NODE and not flag.stopped
    manifest = read_manifest(default_object_store(), plan.objects, NODE)
    assert manifest is not None and list(manifest.files) == ["last.pt"]
