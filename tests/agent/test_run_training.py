import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agent.run_training import main

WRAPPER = Path(__file__).resolve().parents[2] / "agent" / "run_training.py"


def test_missing_command_is_exit_127_with_a_message(tmp_path: Path) -> None:
    code = main(
        [
            "--train-log",
            str(tmp_path / "t.log"),
            "--sidecar-log",
            str(tmp_path / "s.log"),
            "--",
            "no-such-program-xyz",
        ]
    )
    assert code == 127
    assert "cannot start no-such-program-xyz" in (tmp_path / "t.log").read_text()


def test_a_command_that_cannot_start_is_reported_in_the_exit_file(tmp_path: Path) -> None:
    """The launchers read why from the exit file: a status of 127 alone could be the
    program's own."""
    exit_file = tmp_path / "exit.json"
    code = main(
        [
            "--train-log", str(tmp_path / "t.log"), "--sidecar-log", str(tmp_path / "s.log"),
            "--exit-file", str(exit_file), "--", str(tmp_path / "no-such-interpreter"), "x.py",
        ]
    )  # fmt: skip
    assert code == 127
    assert json.loads(exit_file.read_text()) == {
        "exit_status": 127,
        "start_error": f"its command {str(tmp_path / 'no-such-interpreter')!r} could not be run "
        "(No such file or directory)",
    }


def wrapper(tmp_path: Path, *options: str, code: str) -> subprocess.Popen[bytes]:
    """The wrapper as a launcher starts it: in a process group of its own."""
    return subprocess.Popen(
        [
            sys.executable, str(WRAPPER), "--train-log", str(tmp_path / "t.log"),
            "--sidecar-log", str(tmp_path / "s.log"), "--exit-file", str(tmp_path / "exit.json"),
            *options, "--", sys.executable, "-c", code,
        ],
        start_new_session=True,
    )  # fmt: skip


def await_line(path: Path, words: str, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not (path.exists() and words in path.read_text()):
        assert time.monotonic() < deadline, f"{words!r} never appeared in {path}"
        time.sleep(0.02)


def test_a_training_ignoring_sigterm_is_killed_after_the_grace_period_and_says_so(
    tmp_path: Path,
) -> None:
    """On Kubernetes the wrapper itself enforces the grace period, so that the exit file says
    why the training died and the sidecar's final upload still has time to run."""
    ignores = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(60)"
    )
    process = wrapper(tmp_path, "--stop-grace-seconds", "0.5", code=ignores)
    await_line(tmp_path / "t.log", "ready")
    started = time.monotonic()
    os.killpg(process.pid, signal.SIGTERM)
    assert process.wait(timeout=20) == -signal.SIGKILL
    assert 0.5 <= time.monotonic() - started < 10
    report = json.loads((tmp_path / "exit.json").read_text())
    assert report == {"exit_status": 137, "killed_after_grace_seconds": 0.5}
    sidecar = (tmp_path / "s.log").read_text()
    assert "the training ignored SIGTERM for 0.5s: killing it (SIGKILL)" in sidecar


def test_a_training_that_stops_within_the_grace_period_keeps_its_status(tmp_path: Path) -> None:
    process = wrapper(
        tmp_path, "--stop-grace-seconds", "30",
        code="import time; print('ready', flush=True); time.sleep(60)",
    )  # fmt: skip
    await_line(tmp_path / "t.log", "ready")
    os.killpg(process.pid, signal.SIGTERM)
    assert process.wait(timeout=20) == 143
    assert json.loads((tmp_path / "exit.json").read_text()) == {"exit_status": 143}


def test_a_training_over_its_time_limit_gets_sigterm_and_the_grace_to_save_then_fails(
    tmp_path: Path,
) -> None:
    """The training limit: SIGTERM, time to save a checkpoint, and a failed node (status
    124, the limit in the exit file) even though the training, stopped, exited 0."""
    saves_on_sigterm = (
        "import signal, sys, time\n"
        "def save(*_):\n"
        "    print('saving a checkpoint', flush=True); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, save)\n"
        "print('training', flush=True); time.sleep(60)\n"
    )
    started = time.monotonic()
    process = wrapper(tmp_path, "--stop-grace-seconds", "30", "--max-training-seconds", "0.5",
                      code=saves_on_sigterm)  # fmt: skip
    assert process.wait(timeout=20) == 124
    assert 0.5 <= time.monotonic() - started < 15
    assert "saving a checkpoint" in (tmp_path / "t.log").read_text()
    assert json.loads((tmp_path / "exit.json").read_text()) == {
        "exit_status": 0,
        "time_limit": {"name": "max_training_seconds", "seconds": 0.5},
    }
    sidecar = (tmp_path / "s.log").read_text()
    assert "the training reached its time limit of 0.5s (max_training_seconds)" in sidecar


def test_a_training_that_ends_within_its_time_limit_keeps_its_status(tmp_path: Path) -> None:
    process = wrapper(tmp_path, "--max-training-seconds", "60", code="print('done')")
    assert process.wait(timeout=20) == 0
    assert json.loads((tmp_path / "exit.json").read_text()) == {"exit_status": 0}


def test_the_address_space_limit_makes_a_large_allocation_fail(tmp_path: Path) -> None:
    code = main(
        [
            "--train-log", str(tmp_path / "t.log"), "--sidecar-log", str(tmp_path / "s.log"),
            "--address-space-limit", str(256 * 1024 * 1024), "--",
            sys.executable, "-c", "hoard = bytearray(512 * 1024 * 1024)",
        ]
    )  # fmt: skip
    assert code == 1
    assert "MemoryError" in (tmp_path / "t.log").read_text()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may run the training as another user")
def test_the_training_runs_as_the_user_it_is_given(tmp_path: Path) -> None:
    code = main(
        [
            "--train-log", str(tmp_path / "t.log"), "--sidecar-log", str(tmp_path / "s.log"),
            "--user", "1000", "--group", "1000", "--", "/bin/sh", "-c", "id -u; id -g; id -G",
        ]
    )  # fmt: skip
    assert code == 0, (tmp_path / "t.log").read_text()
    assert (tmp_path / "t.log").read_text().split() == ["1000", "1000", "1000"]


def test_wrapper_runs_without_the_project_installed(tmp_path: Path) -> None:
    """The agent is copied into images without Octotrain: it must import nothing of it (only
    its own folder, the script's, is on the path; no PYTHONPATH, no site packages of the user)."""
    result = subprocess.run(
        [
            sys.executable,
            "-E",
            "-s",
            str(WRAPPER),
            "--train-log",
            str(tmp_path / "t.log"),
            "--sidecar-log",
            str(tmp_path / "s.log"),
            "--",
            sys.executable,
            "-c",
            "import sys; print('out'); print('err', file=sys.stderr); sys.exit(4)",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 4
    assert sorted((tmp_path / "t.log").read_text().split()) == ["err", "out"]
    assert result.stdout.split() == (tmp_path / "t.log").read_text().split()


def test_resources_are_sampled_and_the_exit_status_recorded(tmp_path: Path) -> None:
    resources, exit_file = tmp_path / "resources.jsonl", tmp_path / "exit-code"
    code = main(
        [
            "--train-log", str(tmp_path / "t.log"), "--sidecar-log", str(tmp_path / "s.log"),
            "--resources", str(resources), "--exit-file", str(exit_file), "--",
            sys.executable, "-c", "import time; data = bytearray(50_000_000); time.sleep(2.6)",
        ]
    )  # fmt: skip
    assert code == 0 and json.loads(exit_file.read_text()) == {"exit_status": 0}
    samples = [json.loads(line) for line in resources.read_text().splitlines()]
    measured = [s for s in samples if "memory_bytes" in s]
    assert measured and max(s["memory_bytes"] for s in measured) > 50_000_000
    assert {"timestamp", "cpu_percent", "memory_percent"} <= set(measured[0])
    assert samples[0].get("missing") in (None, ["pynvml"])  # psutil is here; pynvml may not be


def test_the_wrapper_waits_for_the_sidecars_final_upload(tmp_path: Path) -> None:
    exit_file, done = tmp_path / "exit-code", tmp_path / "upload-done"

    def upload_when_the_training_ended() -> None:
        while not exit_file.exists():
            time.sleep(0.01)
        time.sleep(0.3)  # the sidecar uploads OUTPUT
        done.write_text("uploaded\n")

    sidecar = threading.Thread(target=upload_when_the_training_ended)
    sidecar.start()
    started = time.monotonic()
    code = main(
        [
            "--train-log", str(tmp_path / "t.log"), "--sidecar-log", str(tmp_path / "s.log"),
            "--exit-file", str(exit_file), "--await-upload", str(done), "--",
            sys.executable, "-c", "raise SystemExit(5)",
        ]
    )  # fmt: skip
    sidecar.join()
    assert code == 5 and done.exists() and time.monotonic() - started >= 0.3
    assert "waiting for the sidecar's final upload" in (tmp_path / "s.log").read_text()


def test_the_wait_for_the_upload_is_bounded(tmp_path: Path) -> None:
    code = main(
        [
            "--train-log", str(tmp_path / "t.log"), "--sidecar-log", str(tmp_path / "s.log"),
            "--exit-file", str(tmp_path / "exit-code"), "--await-upload",
            str(tmp_path / "never"), "--await-upload-seconds", "0.3", "--",
            sys.executable, "-c", "pass",
        ]
    )  # fmt: skip
    assert code == 0
    assert "no sign of a final upload after 0.3s; going on" in (tmp_path / "s.log").read_text()


def test_the_training_starts_once_the_sidecar_is_ready(tmp_path: Path) -> None:
    ready, started = tmp_path / "sync-ready", tmp_path / "started"
    threading.Timer(0.3, ready.write_text, ("ready\n",)).start()
    begun = time.monotonic()
    code = main(
        [
            "--train-log", str(tmp_path / "t.log"), "--sidecar-log", str(tmp_path / "s.log"),
            "--await-sidecar", str(ready), "--",
            sys.executable, "-c", f"open({str(started)!r}, 'w').close()",
        ]
    )  # fmt: skip
    assert code == 0 and started.exists() and time.monotonic() - begun >= 0.3


def test_the_wrapper_extracts_the_metric_definitions_from_the_train_log(tmp_path: Path) -> None:
    """Both launchers start the wrapper, so this is how a plain script gets its charts."""
    extraction = [
        {
            "regex": r"loss=([0-9.e-]+)",
            "meta": {"name": "loss", "x": "step", "ys": ["loss"], "description": "loss",
                     "smooth": "false", "with_timestamp": "false"},
            "x_group": None,
            "lines": [{"group": 1, "key": "loss"}],
        }
    ]  # fmt: skip
    script = "import sys; print('\\x1b[31mloss=0.5\\x1b[0m'); sys.stdout.write('loss=0.25')"
    subprocess.run(
        [
            sys.executable, str(WRAPPER), "--train-log", str(tmp_path / "t.log"),
            "--sidecar-log", str(tmp_path / "s.log"),
            "--metric-extraction", json.dumps(extraction), "--", sys.executable, "-c", script,
        ],
        env=os.environ | {"METRICS": str(tmp_path / "metrics"), "TASK_ID": "3"},
        check=True,
        timeout=60,
    )  # fmt: skip
    lines = (tmp_path / "metrics" / "loss.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"step": 1, "loss": 0.5},
        {"step": 2, "loss": 0.25},  # the last line, unfinished, counts once the training ends
    ]
    assert json.loads((tmp_path / "metrics" / "metrics.json").read_text())["id"] == "3"
    assert "extracting charts loss from the train log" in (tmp_path / "s.log").read_text()
