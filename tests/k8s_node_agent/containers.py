"""A container as a local process group: started in its own session (so that signals reach
everything it started, as they reach a container's PID namespace), its stdout and stderr
recorded as the container log, its resident memory watched against the memory limit (the
node agent's stand-in for the memory cgroup and the kernel's OOM killer)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import psutil

from tests.k8s_node_agent.logs import ContainerLog

# How often the resident memory of a container's processes is compared with its limit, by
# default. Each look walks the machine's process table (about 10 us a process): with a hundred
# containers at this pace that is more CPU than a small machine has, hence the node agent's
# ``memory_poll_seconds``.
MEMORY_POLL_SECONDS = 0.05
# How long the log readers may take to drain the pipes once the container has ended.
_DRAIN_SECONDS = 5.0


@dataclass(frozen=True)
class Exit:
    """How a container ended, in the terms of ``state.terminated``."""

    exit_code: int
    reason: str  # Completed, Error, OOMKilled
    oom_rss: int | None = None  # the resident memory that tripped the limit


class ContainerProcess:
    """One running container. ``on_exit`` is called once, from a thread of its own, after
    the process and everything it started have ended and all their output is in the log."""

    def __init__(
        self,
        argv: list[str],
        cwd: str,
        env: dict[str, str],
        log: ContainerLog,
        memory_limit: int | None,
        on_exit: Callable[[Exit], None],
        memory_poll_seconds: float = MEMORY_POLL_SECONDS,
    ) -> None:
        self._argv = argv
        self._cwd = cwd
        self._env = env
        self._log = log
        self._memory_limit = memory_limit
        self._memory_poll_seconds = memory_poll_seconds
        self._on_exit = on_exit
        self._process: subprocess.Popen[bytes] | None = None
        self._readers: list[threading.Thread] = []
        self._oom_rss: int | None = None
        self.ended = threading.Event()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self) -> None:
        """Start the process; ``OSError`` when it cannot be executed (the kubelet's
        ``StartError``)."""
        self._process = subprocess.Popen(
            self._argv,
            cwd=self._cwd,
            env=self._env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        assert self._process.stdout is not None and self._process.stderr is not None
        self._readers = [
            self._log.capture(self._process.stdout, "stdout"),
            self._log.capture(self._process.stderr, "stderr"),
        ]
        threading.Thread(target=self._watch, name=f"container-{self.pid}", daemon=True).start()

    def signal(self, signum: int) -> None:
        """Send ``signum`` to every process of the container."""
        if self._process is None or self.ended.is_set():
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signum)

    def _watch(self) -> None:
        process = self._process
        assert process is not None
        while True:
            try:
                process.wait(timeout=self._memory_poll_seconds if self._memory_limit else None)
                break
            except subprocess.TimeoutExpired:
                rss = _tree_rss(process.pid)
                if self._memory_limit is not None and rss > self._memory_limit:
                    self._oom_rss = rss
                    self.signal(signal.SIGKILL)
        # The container ends with its first process: whatever it left running goes too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        deadline = time.monotonic() + _DRAIN_SECONDS
        for reader in self._readers:
            reader.join(max(0.0, deadline - time.monotonic()))
        code = process.returncode
        exit_code = 128 - code if code < 0 else code
        if self._oom_rss is not None:
            result = Exit(137, "OOMKilled", self._oom_rss)
        else:
            result = Exit(exit_code, "Completed" if exit_code == 0 else "Error")
        try:
            self._on_exit(result)
        finally:
            # Only now do log followers finish: a client that reads the pod when its log
            # stream ends sees the container terminated (the KubernetesPodOperator resumes
            # the stream, duplicating lines, when it still looks running).
            self.ended.set()
            self._log.mark_complete()


def _tree_rss(pid: int) -> int:
    """Resident memory of a process and all its descendants, in bytes."""
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except psutil.Error:
            continue
    return total
