"""What ``octotrain up`` checks around ``airflow standalone``, which itself notices nothing: its
components (``airflow scheduler``, ``dag-processor``, ``api-server``, ``triggerer``) are found on
PATH, and one that cannot start or dies leaves standalone running, while the terminal said only
"starting Airflow ..." for up to ten minutes.

So the port is checked before anything starts, the interpreter's own folder leads PATH (a venv's
``octotrain`` called by its path, the venv not activated), and the components are watched: each
must appear as a process of standalone's within a start time and stay; the first that does not
stops ``octotrain up`` within seconds, with the end of Airflow's log in the terminal.
"""

from __future__ import annotations

import errno
import os
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

COMPONENTS = ("scheduler", "dag-processor", "api-server", "triggerer")
# How long a component may take to appear as a process of standalone's (a loaded 2-core machine
# takes seconds to start a Python process; standalone starts them after its database migration).
START_SECONDS = 120.0
# The lines of Airflow's log quoted when a component is gone.
QUOTED_LINES = 15


class ComponentFailed(RuntimeError):
    """An Airflow component could not start or died; the message says which and why."""


def with_own_bin_on_path(env: dict[str, str]) -> dict[str, str]:
    """``env`` whose PATH starts with this interpreter's folder, where the ``airflow`` command
    of the same installation is: standalone starts its components by that name."""
    own = str(Path(sys.executable).parent)
    rest = [part for part in env.get("PATH", "").split(os.pathsep) if part and part != own]
    return env | {"PATH": os.pathsep.join([own, *rest])}


def check_port_free(port: int, host: str = "127.0.0.1") -> None:
    """Refuse at once when something already listens where the api-server is to bind (it then
    fails while the scheduler talks to whatever holds the port)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.bind((host, port))
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise ComponentFailed(
                f"port {port} on {host} is already in use: stop what listens there or choose "
                f"another port (make run PORT=8093, octotrain up --port 8093)"
            ) from None
        raise ComponentFailed(f"cannot use port {port} on {host}: {error}") from None
    finally:
        probe.close()


@dataclass
class ComponentWatch:
    """The components of the standalone process ``pid``, each by the process it was first
    seen as (a component may change its command line once started, e.g. the api-server's
    server process, so it is followed by its pid, not its name)."""

    pid: int
    log: Path
    started: float = field(default_factory=time.monotonic)
    seen: dict[str, psutil.Process] = field(default_factory=dict)

    def check(self) -> None:
        """Raise ``ComponentFailed`` when a component that ran is gone, or one has not appeared
        within ``START_SECONDS`` (standalone's thread that starts it failed)."""
        gone = sorted(name for name, process in self.seen.items() if not _alive(process))
        if gone:
            raise ComponentFailed(self._why(f"Airflow's {', '.join(gone)} exited"))
        for name, process in self._starting().items():
            self.seen.setdefault(name, process)
        missing = [name for name in COMPONENTS if name not in self.seen]
        if missing and time.monotonic() - self.started > START_SECONDS:
            raise ComponentFailed(
                self._why(f"Airflow's {', '.join(missing)} did not start in {START_SECONDS:.0f} s")
            )

    def _starting(self) -> dict[str, psutil.Process]:
        """The components among standalone's children now, by name."""
        try:
            children = psutil.Process(self.pid).children()
        except psutil.NoSuchProcess:
            return {}
        found = {}
        for child in children:
            try:
                command = child.cmdline()
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            found |= {name: child for name in COMPONENTS if name in command and _alive(child)}
        return found

    def _why(self, what: str) -> str:
        return f"{what}; the end of {self.log}:\n{last_lines(self.log, QUOTED_LINES)}"


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def last_lines(path: Path, count: int) -> str:
    """The last ``count`` lines of a log (its last 64 KiB read)."""
    try:
        with path.open("rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - 65536))
            text = log.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return "(no log written)"
    return "\n".join(f"  {line}" for line in text.splitlines()[-count:])
