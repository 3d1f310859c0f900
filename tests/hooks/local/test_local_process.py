import sys
import time
from pathlib import Path

import pytest

from hooks.local.local_process import LocalNodeProcess, NodeStartFailed, free_port
from hooks.runs.run_abort import RunAbortMarker
from hooks.runs.run_files import FolderRunFiles
from octotrain.abort_flags import AbortFlag
from octotrain.run_layout import RunLayout


def node(
    tmp_path: Path, code: str, grace: float = 5, command: list[str] | None = None
) -> LocalNodeProcess:
    return LocalNodeProcess(
        command=command or [sys.executable, "-c", code],
        env={"GREETING": "hello"},
        cwd=tmp_path,
        train_log=tmp_path / "train.log",
        sidecar_log=tmp_path / "sidecar.log",
        resources=tmp_path / "resources.jsonl",
        exit_file=tmp_path / "exit.json",
        stop_grace_seconds=grace,
    )


def run_flag(tmp_path: Path) -> RunAbortMarker:
    """The flag of a run whose folder is ``tmp_path``'s run 7/r."""
    return RunAbortMarker(FolderRunFiles(RunLayout(tmp_path, 7, "r")))


def test_output_goes_to_the_train_log_and_exit_code_is_kept(tmp_path: Path) -> None:
    process = node(tmp_path, "import os,sys; print(os.environ['GREETING']); sys.exit(3)")
    process.start()
    outcome = process.wait(run_flag(tmp_path))
    assert outcome.exit_code == 3 and not outcome.succeeded
    assert (tmp_path / "train.log").read_text() == "hello\n"
    sidecar = (tmp_path / "sidecar.log").read_text()
    assert "training process started" in sidecar
    assert "exited with status 3" in sidecar


def test_metrics_writer_is_importable_by_the_training_process(tmp_path: Path) -> None:
    process = node(tmp_path, "import octotrain_metrics; print(octotrain_metrics.MAX_CHARTS)")
    process.start()
    assert process.wait(run_flag(tmp_path)).succeeded
    assert (tmp_path / "train.log").read_text() == "6\n"


def test_abort_flag_stops_a_running_node(tmp_path: Path) -> None:
    process = node(tmp_path, "import time; time.sleep(60)")
    process.start()
    marker = run_flag(tmp_path)
    marker.raise_flag(AbortFlag.node_failed("distributed-1", "failed with exit code 3"))
    started = time.monotonic()
    outcome = process.wait(marker, poll_seconds=0.1)
    assert time.monotonic() - started < 5
    assert outcome.stopped_by == AbortFlag.node_failed("distributed-1", "failed with exit code 3")
    assert outcome.exit_code == 143  # SIGTERM, as a container runtime reports it
    assert outcome.killed_after_grace_seconds is None


def test_a_node_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    code = (
        "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ignoring SIGTERM', flush=True); time.sleep(60)"
    )
    process = node(tmp_path, code, grace=0.5)
    process.start()
    deadline = time.monotonic() + 20
    train_log = tmp_path / "train.log"
    while not (train_log.exists() and "ignoring SIGTERM" in train_log.read_text()):
        assert time.monotonic() < deadline, "the training never started"
        time.sleep(0.02)
    assert process.stop() == 137
    outcome = process.wait(run_flag(tmp_path))
    assert outcome.killed_after_grace_seconds == 0.5  # not taken for an out-of-memory kill


@pytest.mark.parametrize(
    ("argument", "words"),
    [("nul\x00byte", "embedded null byte"), ("x" * 200_000, "Argument list too long")],
)
def test_a_command_the_os_refuses_is_a_start_failure_in_the_os_s_words(
    tmp_path: Path, argument: str, words: str
) -> None:
    process = node(tmp_path, "", command=[sys.executable, "-c", "pass", argument])
    with pytest.raises(NodeStartFailed, match=f"the OS refused to start it \\(.*{words}"):
        process.start()
    assert "the OS refused to start it" in (tmp_path / "sidecar.log").read_text()


def test_an_interpreter_that_cannot_be_run_is_a_start_failure(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-python")
    process = node(tmp_path, "", command=[missing, "train.py"])
    process.start()
    outcome = process.wait(run_flag(tmp_path))
    assert outcome.exit_code == 127
    assert (
        outcome.start_error
        == f"its command {missing!r} could not be run (No such file or directory)"
    )


def test_free_port_is_bindable() -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", free_port()))
