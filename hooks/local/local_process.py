"""The door to local processes: the local launcher runs each node as a process on this machine.

A node's command is started through ``agent/run_training.py`` (the same wrapper the pods use),
in its own process group, and watched until it ends or the run asks every node to stop. How it
ended is what this launcher saw (a stop, a kill after the grace period) and what the wrapper
reported in its exit file (a command that could not be run).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hooks.runs.run_abort import RunAbortMarker
from octotrain.abort_flags import AbortFlag
from octotrain.exit_reports import ExitReport
from octotrain.hang_detection import HungNode
from octotrain.hang_detection import wrapper_arguments as hang_arguments
from octotrain.time_limits import ReachedLimit

AGENT_DIR = Path(__file__).resolve().parents[2] / "agent"
WRAPPER = AGENT_DIR / "run_training.py"
# How long past the grace period a stopped node's wrapper may take to end before it is killed.
WRAPPER_KILL_SECONDS = 5.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now, for the run's rendezvous (MASTER_PORT)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class NodeStartFailed(Exception):
    """The node's process could not be started at all; the message says why."""


@dataclass(frozen=True)
class NodeOutcome:
    """How a node's process ended: its exit status, the run's abort flag if that stopped it,
    the grace period after which it had to be killed, why its command could not be run, the
    time limit or the hang that stopped it."""

    exit_code: int
    stopped_by: AbortFlag | None = None
    killed_after_grace_seconds: float | None = None
    start_error: str | None = None
    time_limit: ReachedLimit | None = None
    hung: HungNode | None = None

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0 and self.stopped_by is None


class LocalNodeProcess:
    """One node's training process."""

    def __init__(
        self,
        *,
        command: list[str],
        env: dict[str, str],
        cwd: Path,
        train_log: Path,
        sidecar_log: Path,
        resources: Path,
        exit_file: Path,
        stop_grace_seconds: float,
        max_training_seconds: float | None = None,
        confinement: list[str] | None = None,
        metric_extraction: list[str] | None = None,
        hang_after_seconds: int | None = None,
        stop_when_hung: bool = False,
        progress: list[str] | None = None,
    ) -> None:
        self.command = command
        self.resources = resources
        self.env = env
        self.cwd = cwd
        self.train_log = train_log
        self.sidecar_log = sidecar_log
        self.exit_file = exit_file
        self.stop_grace_seconds = stop_grace_seconds
        self.max_training_seconds = max_training_seconds
        self.confinement = confinement or []
        self.metric_extraction = metric_extraction or []
        self.hang_after_seconds, self.stop_when_hung = hang_after_seconds, stop_when_hung
        # While the wrapper finds the training hung, its report (``agent/hang_watch.py``).
        self.hang_report = exit_file.with_name(f"{exit_file.stem}.hang.json")
        self.progress = progress or []  # the wrapper's phase and progress files
        self._process: subprocess.Popen[bytes] | None = None
        self._killed_after_grace: float | None = None

    def start(self) -> int:
        """Start the node; return its pid. ``NodeStartFailed`` when the OS refuses to (a NUL
        byte, an argument list over its limit, a missing working folder): the sidecar log
        says so too, as it would any other start."""
        env = dict(self.env)
        # The launcher's interpreter stands in for the image's "python"; the agent folder
        # makes the metrics writer importable as ``octotrain_metrics``.
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(AGENT_DIR), self.env.get("PYTHONPATH", "")])
        )
        env.setdefault("PYTHONUNBUFFERED", "1")
        self.hang_report.unlink(missing_ok=True)  # an earlier start's, of this node
        argv = [
            sys.executable,
            str(WRAPPER),
            "--train-log",
            str(self.train_log),
            "--sidecar-log",
            str(self.sidecar_log),
            "--resources",
            str(self.resources),
            "--exit-file",
            str(self.exit_file),
            "--stop-grace-seconds",
            f"{self.stop_grace_seconds:g}",
            *(
                ["--max-training-seconds", f"{self.max_training_seconds:g}"]
                if self.max_training_seconds is not None
                else []
            ),
            *self.confinement,
            *self.metric_extraction,
            *hang_arguments(
                self.hang_after_seconds,
                stop_when_hung=self.stop_when_hung,
                report=str(self.hang_report),
            ),
            *self.progress,
            "--",
            *self.command,
        ]
        try:
            self._process = subprocess.Popen(
                argv,
                cwd=self.cwd,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except (OSError, ValueError) as error:
            why = f"the OS refused to start it ({_in_words(error)})"
            with self.sidecar_log.open("a", encoding="utf-8") as log:
                log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {why}\n")
            raise NodeStartFailed(why) from error
        return self._process.pid

    def wait(
        self,
        abort: RunAbortMarker,
        poll_seconds: float = 0.5,
        *,
        on_poll: Callable[[], None] | None = None,
    ) -> NodeOutcome:
        """Wait for the node to end; stop it as soon as the run's abort flag goes up.
        ``on_poll`` is called at each look while it runs (to report a hang as it happens)."""
        process = self._require_started()
        while True:
            try:
                return self._outcome(process.wait(timeout=poll_seconds))
            except subprocess.TimeoutExpired:
                if on_poll is not None:
                    on_poll()
                flag = abort.flag()
                if flag is not None:
                    return self._outcome(self.stop(), stopped_by=flag)

    def hung(self) -> HungNode | None:
        """The hang the wrapper reports now, if the training looks hung."""
        try:
            return HungNode.from_json(json.loads(self.hang_report.read_text()))
        except (FileNotFoundError, ValueError):
            return None

    def terminate(self) -> None:
        """SIGTERM the node's process group and return at once: the wrapper kills the training
        itself when it ignores SIGTERM for the grace period. Safe in a signal handler (no lock
        of ``subprocess`` is taken), where Airflow asks a task to stop."""
        self._signal(signal.SIGTERM)

    def stop(self) -> int:
        """SIGTERM the node, wait for it to end (SIGKILL, should the wrapper itself hang a
        while past the grace period); its exit status."""
        process = self._require_started()
        if process.poll() is None:
            self.terminate()
            deadline = time.monotonic() + self.stop_grace_seconds + WRAPPER_KILL_SECONDS
            while process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if process.poll() is None:
                self._killed_after_grace = self.stop_grace_seconds
                self._signal(signal.SIGKILL)
        code = process.wait()
        return 128 - code if code < 0 else code

    def _outcome(self, code: int, stopped_by: AbortFlag | None = None) -> NodeOutcome:
        try:
            report = ExitReport.parse(self.exit_file.read_text())
        except FileNotFoundError:  # killed before it could write it
            report = ExitReport()
        killed = report.killed_after_grace_seconds
        return NodeOutcome(
            exit_code=128 - code if code < 0 else code,
            stopped_by=stopped_by,
            killed_after_grace_seconds=self._killed_after_grace if killed is None else killed,
            start_error=report.start_error,
            time_limit=report.reached_limit,
            hung=report.hung_node,
        )

    def _signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._require_started().pid, signum)

    def _require_started(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            raise RuntimeError("the node process was not started")
        return self._process


def _in_words(error: Exception) -> str:
    """An OS error as its message and the file it concerns (not Python's repr of them)."""
    if isinstance(error, OSError) and error.strerror:
        return f"{error.strerror}: {error.filename}" if error.filename else error.strerror
    return str(error)
