"""Every node of the local launcher that does not end normally says why on the first line of
its supplemental log, and the run's message in the catalog carries it: a node the OS refuses
to start, a failed staging, Airflow stopping the task (``on_kill``: a failure in Airflow), a
user's stop of a node that ignores SIGTERM (no failure in Airflow: its launch task skipped
without a traceback, its run noted), a node over its memory limit; and a node runs as its
task's uid, unable to write its inputs. Through Airflow's ``dag.test()``
(tests/e2e/node_endings_runner.py), on the embedded default's SQLite and local folder store."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from octotrain.contracts import NodeLogNames
from octotrain.settings import REPO_ROOT
from tests.e2e.dag_test_runner import task_logs

SCENARIOS = ["start-refused", "stop-ignored", "airflow-kill", "staging-fails", "oom", "uid"]
GRACE_SECONDS = 2
NODE = "single-0"


def interpreter_for_uid_1000() -> str | None:
    """A Python that uid 1000 can run here (this checkout's may live in root's home)."""
    if os.geteuid() != 0:
        return None
    for candidate in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        try:
            probe = subprocess.run(
                [candidate, "-c", "pass"], user=1000, group=1000, extra_groups=[],
                capture_output=True, check=False, timeout=30,
            )  # fmt: skip
        except OSError:
            continue
        if probe.returncode == 0:
            return candidate
    return None


INTERPRETER = interpreter_for_uid_1000()


@pytest.fixture(scope="module")
def state() -> Iterator[Path]:
    """The runs' state folder, reachable by uid 1000 (pytest's own folders are private to
    their owner); removed at the end, files of uid 1000 included."""
    folder = Path(tempfile.mkdtemp(prefix="octotrain-node-endings-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)
    assert not folder.exists()


@pytest.fixture(scope="module")
def results(state: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("node-endings")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "OCTOTRAIN_"))}
    env |= {
        "AIRFLOW_HOME": str(root / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_ROOT / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{root / 'airflow.db'}",
        "OCTOTRAIN_STATE_DIR": str(state),
        "OCTOTRAIN_STOP_GRACE_SECONDS": str(GRACE_SECONDS),
        "PYTHONPATH": str(REPO_ROOT),
    }
    migrate = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], env=env,
                             capture_output=True, text=True, check=False)  # fmt: skip
    assert migrate.returncode == 0, migrate.stdout[-3000:] + migrate.stderr[-3000:]
    runner = REPO_ROOT / "tests" / "e2e" / "node_endings_runner.py"
    completed = subprocess.run(
        [sys.executable, str(runner), INTERPRETER or sys.executable, *SCENARIOS],
        env=env, capture_output=True, text=True, cwd=REPO_ROOT, timeout=600, check=False,
    )  # fmt: skip
    (root / "runner.log").write_text(completed.stdout + completed.stderr)
    found = {
        result["scenario"]: result
        for line in completed.stdout.splitlines()
        if line.startswith("RESULT ") and (result := json.loads(line.removeprefix("RESULT ")))
    }
    assert set(found) == set(SCENARIOS), (completed.stdout + completed.stderr)[-6000:]
    launch_logs = task_logs(completed.stdout, "launch")
    return {name: result | {"launch_logs": launch_logs[name]} for name, result in found.items()}


def run_folder(state: Path, result: dict[str, Any]) -> Path:
    return state / "runs" / str(result["task_id"]) / result["run"]["run_key"]


def log(state: Path, result: dict[str, Any], kind: str) -> str:
    names = NodeLogNames(task_id=result["task_id"], node_index=NODE).by_kind()
    return (run_folder(state, result) / "logs" / names[kind]).read_text()


def reason(state: Path, result: dict[str, Any]) -> str:
    """The supplemental log's first line; the run's message must carry it."""
    first = log(state, result, "supplemental").splitlines()[0]
    assert result["run"]["message"] == first
    return first


def test_a_node_the_os_refuses_to_start_says_why(
    results: dict[str, dict[str, Any]], state: Path
) -> None:
    refused = results["start-refused"]
    assert refused["tasks"]["launch[0]"] == "failed" and refused["run"]["state"] == "failed"
    assert reason(state, refused).startswith(
        f"node {NODE} failed to start because the OS refused to start it ("
    )
    assert "gone-code-dir" in reason(state, refused)
    assert "the OS refused to start it" in log(state, refused, "sidecar")


def test_a_failed_staging_says_why_for_the_node(
    results: dict[str, dict[str, Any]], state: Path
) -> None:
    staging = results["staging-fails"]
    assert staging["tasks"]["stage_data"] == "failed" and staging["run"]["state"] == "failed"
    first = reason(state, staging)
    assert first.startswith(f"node {NODE} did not start: staging failed because ")
    assert "checksum" in first
    assert "ERROR staging failed" in log(state, staging, "init")


def test_a_task_stopped_by_airflow_says_airflow_stopped_it(
    results: dict[str, dict[str, Any]], state: Path
) -> None:
    killed = results["airflow-kill"]
    assert killed["tasks"]["launch[0]"] == "failed" and killed["run"]["state"] == "stopped"
    assert killed["state"] == "failed" and killed["note"] is None  # Airflow's own stop
    assert reason(state, killed) == (
        f"node {NODE} was stopped by Airflow (its task instance was stopped or timed out)"
    )
    assert "exit code 143: terminated by SIGTERM" in log(state, killed, "supplemental")


def test_a_node_ignoring_a_user_s_stop_is_killed_after_the_grace_period(
    results: dict[str, dict[str, Any]], state: Path
) -> None:
    stopped = results["stop-ignored"]
    assert stopped["run"]["state"] == "stopped"
    killed = (
        f"node {NODE} was stopped by alice; it ignored SIGTERM and was killed after the grace "
        f"period of {GRACE_SECONDS} s"
    )
    # its supplemental log says how the node ended; the run's message is the stop in a line
    assert log(state, stopped, "supplemental").splitlines()[0] == killed
    # Airflow 3 has no stopped state, and a stop must not show as a green success: the node's
    # task fails saying who stopped it (not retried); its logs are collected; nothing is
    # archived; the DAG run is failed, its note saying who stopped it.
    assert stopped["state"] == "failed", stopped
    tasks = stopped["tasks"]
    assert (tasks["launch[0]"], tasks["collect_logs"], tasks["archive_model"]) == (
        "failed", "success", "upstream_failed"
    )  # fmt: skip
    assert killed in stopped["launch_logs"][0]
    assert stopped["note"].startswith("**Stopped by alice** at "), stopped["note"]
    assert "shows as failed" in stopped["note"]
    assert stopped["run"]["message"].startswith("Stopped by alice at "), stopped["run"]
    assert "memory" not in log(state, stopped, "supplemental").lower()
    assert f"the training ignored SIGTERM for {GRACE_SECONDS}s" in log(state, stopped, "sidecar")


def test_a_node_over_its_memory_limit_says_out_of_memory_with_the_limit(
    results: dict[str, dict[str, Any]], state: Path
) -> None:
    oom = results["oom"]
    assert oom["tasks"]["launch[0]"] == "failed" and oom["run"]["state"] == "failed"
    init = log(state, oom, "init")
    first = reason(state, oom)
    if "applied by the memory cgroup" in init:
        assert first.startswith(
            f"node {NODE} ran out of memory: it used more than its memory limit of 128 MiB and "
            "was killed (memory cgroup, exit code 137)"
        )
    else:  # a machine that lets no cgroup be made: the init log said so
        assert "applied as RLIMIT_AS" in init
        assert first.startswith(f"node {NODE} ran out of its memory limit of 128 MiB (RLIMIT_AS)")
    assert "allocating" in log(state, oom, "train")


def test_a_node_runs_as_its_task_s_uid_and_cannot_write_its_inputs(
    results: dict[str, dict[str, Any]], state: Path
) -> None:
    if INTERPRETER is None:
        pytest.skip("the launcher is not root, or no Python on this machine runs as uid 1000")
    as_user = results["uid"]
    assert as_user["state"] == "success", as_user
    assert as_user["run"]["model_version"] is not None  # archive read the uid's private files
    train = log(state, as_user, "train")
    assert "uid 1000 gid 1000 groups []" in train and "DATASET is read-only" in train
    assert "the training runs as uid 1000 (group 1000" in log(state, as_user, "init")
    model = run_folder(state, as_user) / "nodes" / NODE / "output" / "weights" / "model.txt"
    assert model.stat().st_uid == 1000 and model.stat().st_mode & 0o077 == 0
    shutil.rmtree(run_folder(state, as_user))  # the run folder is removed, uid 1000's files too
