"""The door to local processes: the local launcher runs each node as a process on this machine.

A node's command is started through ``agent/run_training.py`` (the same wrapper the pods use),
in its own process group, and watched until it ends or the run asks every node to stop.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from octotrain.abort_flags import AbortFlag

AGENT_DIR = Path(__file__).resolve().parents[1] / "agent"
WRAPPER = AGENT_DIR / "run_training.py"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now, for the run's rendezvous (MASTER_PORT)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class NodeOutcome:
    """How a node ended: its exit status, and why it was stopped if it was."""

    exit_code: int
    stopped_because: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0 and self.stopped_because is None


class RunAbortMarker:
    """The run's abort flag (``octotrain.abort_flags``) as a file in the run folder.

    Nodes run in separate Airflow task instances (possibly separate processes), so the
    failure of one, or a stop, reaches the others through the file system they share.
    """

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / "ABORT"

    def raise_flag(self, flag: AbortFlag) -> None:
        """The first flag stays."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            partial = self.path.with_suffix(f".partial-{os.getpid()}")
            partial.write_text(flag.to_json())
            partial.replace(self.path)

    def flag(self) -> AbortFlag | None:
        try:
            return AbortFlag.from_json(self.path.read_text())
        except FileNotFoundError:
            return None

    def reason(self) -> str | None:
        """Why the run is being stopped, or None while it is not."""
        flag = self.flag()
        return None if flag is None else flag.text()


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
        stop_grace_seconds: float,
    ) -> None:
        self.command = command
        self.resources = resources
        self.env = env
        self.cwd = cwd
        self.train_log = train_log
        self.sidecar_log = sidecar_log
        self.stop_grace_seconds = stop_grace_seconds
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> int:
        """Start the node; return its pid."""
        env = dict(self.env)
        # The launcher's interpreter stands in for the image's "python"; the agent folder
        # makes the metrics writer importable as ``octotrain_metrics``.
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(AGENT_DIR), self.env.get("PYTHONPATH", "")])
        )
        env.setdefault("PYTHONUNBUFFERED", "1")
        argv = [
            sys.executable,
            str(WRAPPER),
            "--train-log",
            str(self.train_log),
            "--sidecar-log",
            str(self.sidecar_log),
            "--resources",
            str(self.resources),
            "--",
            *self.command,
        ]
        self._process = subprocess.Popen(
            argv,
            cwd=self.cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        return self._process.pid

    def wait(self, abort: RunAbortMarker, poll_seconds: float = 0.5) -> NodeOutcome:
        """Wait for the node to end; stop it as soon as the run's abort flag goes up."""
        process = self._require_started()
        while True:
            try:
                return NodeOutcome(exit_code=process.wait(timeout=poll_seconds))
            except subprocess.TimeoutExpired:
                reason = abort.reason()
                if reason is not None:
                    return NodeOutcome(exit_code=self.stop(), stopped_because=reason)

    def stop(self) -> int:
        """SIGTERM the node's process group, SIGKILL it after the grace period; exit status."""
        process = self._require_started()
        if process.poll() is None:
            self._signal(signal.SIGTERM)
            deadline = time.monotonic() + self.stop_grace_seconds
            while process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if process.poll() is None:
                self._signal(signal.SIGKILL)
        code = process.wait()
        return 128 - code if code < 0 else code

    def _signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._require_started().pid, signum)

    def _require_started(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            raise RuntimeError("the node process was not started")
        return self._process
