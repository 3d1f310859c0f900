"""Restarts of a local run's nodes (``octotrain.restarts``): a node process killed from outside
stands for a lost node; the run's nodes are started again from their checkpoints, all of them,
up to the task's limit, while a training that fails on its own is not started again."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from airflow.sdk.exceptions import AirflowException

from octotrain.planning import RunPlan
from operators.local.launch_local import LaunchLocalNodeOperator
from tests.operators.local.test_launch_local import DEADLINE_SECONDS, _TaskInstance, layout_of
from tests.operators.local.test_launch_local import plan as plan

# Saves a checkpoint, says so, then trains until stopped; started again with its checkpoint
# there, it says it resumed and ends (with the exit status NODE_EXIT, 0 by default).
RESUMES = """
import os, pathlib, sys, time
checkpoint = pathlib.Path(os.environ["CHECKPOINT"]) / "step.txt"
if checkpoint.exists():
    print("resumed from", checkpoint.read_text(), flush=True)
    sys.exit(int(os.environ.get("NODE_EXIT", "0")))
checkpoint.write_text("step 5")
print("checkpoint saved", flush=True)
time.sleep(60)
"""


def _plan(plan: RunPlan, **changes: object) -> RunPlan:
    update = {"command": [sys.executable, "-c", RESUMES], "max_node_restarts": 2, **changes}
    return plan.model_copy(update=update)


class _Node:
    """A node's launch task, run in a thread as Airflow would run it."""

    def __init__(self, plan: RunPlan, node_index: str) -> None:
        self.plan, self.node_index = plan, node_index
        self.operator = LaunchLocalNodeOperator(
            task_id="launch", training_task_id=3, node_index=node_index
        )
        self.result: object = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.result = self.operator.execute({"ti": _TaskInstance(self.plan)})  # type: ignore[arg-type]
        except Exception as error:
            self.result = error

    def train_log(self) -> str:
        layout = layout_of(self.plan)
        path = layout.log_path(layout.log_names(self.node_index).train)
        return path.read_text() if path.is_file() else ""

    def supplemental(self) -> str:
        layout = layout_of(self.plan)
        return layout.log_path(layout.log_names(self.node_index).supplemental).read_text()

    def wait_for_log(self, text: str, count: int = 1) -> None:
        deadline = time.monotonic() + DEADLINE_SECONDS
        while self.train_log().count(text) < count:
            assert time.monotonic() < deadline, f"{self.node_index} never logged {text!r}"
            time.sleep(0.05)

    def kill(self) -> None:
        """Kill the node's process group from outside, as a lost machine would end it."""
        process = self.operator._process
        assert process is not None and process._process is not None
        os.killpg(process._process.pid, signal.SIGKILL)

    def ended(self) -> object:
        self.thread.join(DEADLINE_SECONDS)
        assert not self.thread.is_alive(), f"{self.node_index} did not end"
        return self.result


def _start(plan: RunPlan, node_index: str) -> _Node:
    layout_of(plan).logs_dir.mkdir(parents=True, exist_ok=True)  # as stage_data leaves it
    node = _Node(plan, node_index)
    node.thread.start()
    return node


def test_a_killed_node_is_started_again_from_its_checkpoint_and_finishes(
    plan: RunPlan,
) -> None:
    node = _start(_plan(plan), "single-0")
    node.wait_for_log("checkpoint saved")
    node.kill()
    assert node.ended() == 0
    assert "resumed from step 5" in node.train_log()
    log = node.supplemental()
    assert "failure class lost" in log
    assert "restart 1 of at most 2" in log


def test_every_node_of_a_distributed_run_is_started_again_together(
    plan: RunPlan,
) -> None:
    two_nodes = _plan(plan, node_indices=["distributed-0", "distributed-1"])
    first, second = (_start(two_nodes, node) for node in two_nodes.node_indices)
    first.wait_for_log("checkpoint saved")
    second.wait_for_log("checkpoint saved")
    second.kill()
    assert (first.ended(), second.ended()) == (0, 0)
    assert "resumed from step 5" in first.train_log()
    assert "resumed from step 5" in second.train_log()
    assert "was stopped to be started again with every node of the run" in first.supplemental()
    assert "node distributed-1 was lost" in first.supplemental()
    assert "failure class lost" in second.supplemental()


def test_the_task_s_restart_limit_is_honoured(plan: RunPlan) -> None:
    once = _plan(plan, max_node_restarts=1, command=[sys.executable, "-c", _TRAINS_UNTIL_KILLED])
    node = _start(once, "single-0")
    node.wait_for_log("training")
    node.kill()
    node.wait_for_log("training", count=2)
    node.kill()
    error = node.ended()
    assert isinstance(error, AirflowException)
    log = node.supplemental()
    assert "not restarted: the run's 1 restarts were all used" in log
    assert "restart 1 of at most 1" in log  # the first loss's, kept


def test_no_restarts_when_the_task_allows_none(plan: RunPlan) -> None:
    node = _start(_plan(plan, max_node_restarts=0), "single-0")
    node.wait_for_log("checkpoint saved")
    node.kill()
    assert isinstance(node.ended(), AirflowException)
    assert "not restarted: the task's max_node_restarts is 0" in node.supplemental()
    assert "resumed" not in node.train_log()


def test_a_training_that_fails_on_its_own_is_not_started_again(
    plan: RunPlan,
) -> None:
    fails = _plan(plan, command=[sys.executable, "-c", "print('training', flush=True); exit(3)"])
    node = _start(fails, "single-0")
    error = node.ended()
    assert isinstance(error, AirflowException)
    assert node.train_log().count("training") == 1
    log = node.supplemental()
    assert "failure class training: the training failed on its own (not retried)" in log
    assert not list((layout_of(fails).run_dir / "restarts").glob("*.json"))


def test_a_training_killed_by_sigkill_from_outside_is_lost_in_both_lines(plan: RunPlan) -> None:
    """A SIGKILL that no stop and no kill at the memory limit explains: the exit status's words
    and the failure class both say it came from outside the training."""
    killed = _plan(
        plan,
        max_node_restarts=0,
        command=[sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
    )
    node = _start(killed, "single-0")
    assert isinstance(node.ended(), AirflowException)
    log = node.supplemental()
    assert "killed by SIGKILL from outside the training" in log
    assert "failure class lost: the node was lost for a reason outside its training" in log
    assert "failed on its own" not in log


_TRAINS_UNTIL_KILLED = "import time\nprint('training', flush=True)\ntime.sleep(60)\n"


def test_a_failed_node_s_supplemental_log_quotes_its_train_log(plan: RunPlan) -> None:
    code = "import sys\nprint('loss 0.5')\nprint('giving up', sys.argv[-1])\nsys.exit(4)\n"
    failing = _plan(plan, command=[sys.executable, "-c", code], max_node_restarts=0)
    failing = failing.model_copy(update={"parameters": {"epochs": 3}})
    node = _start(failing, "single-0")
    assert isinstance(node.ended(), AirflowException)
    log = node.supplemental()
    assert log.endswith(
        "the last lines of the train log:\n  | loss 0.5\n  | giving up --epochs=3\n"
    )
