"""Run the user's training command, teeing its output into the train log.

    python run_training.py --train-log PATH --sidecar-log PATH [--resources PATH]
        [--await-sidecar PATH] [--exit-file PATH [--await-upload PATH]] -- COMMAND [ARGS...]

Both launchers start the user's command through this wrapper so that the train log holds
exactly the program's stdout and stderr, the sidecar log records process control, and a stop
request (SIGTERM/SIGINT) reaches the whole training process group. The exit status is the
program's own (128 + N when it was killed by signal N), as a container runtime reports it.
With ``--await-sidecar`` the training starts once the pod's sidecar is ready (it then uploads
whatever happens, even if the training is killed at once); with ``--resources`` the resource
monitor samples the training process into that file; with
``--exit-file`` the exit status is also written there when the program ends: a pod's sidecar
waits for it to make its final upload, and with ``--await-upload`` the wrapper then waits (at
most ``--await-upload-seconds``) until the sidecar says it is done, so that the pod, which
Kubernetes ends once this container has, lives until ``OUTPUT`` is safe.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import BinaryIO

from resource_monitor import ResourceMonitor


def _stamp() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _control(log: Path, message: str) -> None:
    with log.open("a", encoding="utf-8") as handle:
        handle.write(f"{_stamp()} {message}\n")


def _tee(stream: BinaryIO, log: Path, echo: BinaryIO) -> None:
    with log.open("ab", buffering=0) as handle:
        for line in iter(stream.readline, b""):
            handle.write(line)
            echo.write(line)
            echo.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-log", type=Path, required=True)
    parser.add_argument("--sidecar-log", type=Path, required=True)
    parser.add_argument("--resources", type=Path)
    parser.add_argument("--exit-file", type=Path)
    parser.add_argument("--await-upload", type=Path)
    parser.add_argument("--await-upload-seconds", type=float, default=3600)
    parser.add_argument("--await-sidecar", type=Path)
    parser.add_argument("--await-sidecar-seconds", type=float, default=120)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no training command given after --")
    args.train_log.parent.mkdir(parents=True, exist_ok=True)
    args.train_log.touch()

    if args.await_sidecar is not None:
        _await(args.await_sidecar, args.await_sidecar_seconds, args.sidecar_log, "the sidecar")
    _control(args.sidecar_log, f"starting training command: {' '.join(command)}")
    try:
        # The child stays in the wrapper's process group: a launcher that signals the group
        # reaches the whole training process tree, SIGKILL included.
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as error:
        message = f"cannot start {command[0]}: {error.strerror}"
        with args.train_log.open("a", encoding="utf-8") as handle:
            handle.write(message + "\n")
        _control(args.sidecar_log, message)
        status = 127 if isinstance(error, FileNotFoundError) else 126
        _exited(args.exit_file, status)
        return _after_upload(args, status)

    def forward(signum: int, _frame: object) -> None:
        # In a container the runtime signals only PID 1 (this wrapper): pass the signal on to
        # the whole group, ignoring it here so the wrapper lives to record the exit status.
        _control(args.sidecar_log, f"received {signal.Signals(signum).name}; stopping training")
        signal.signal(signum, signal.SIG_IGN)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(os.getpgrp(), signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    _control(args.sidecar_log, f"training process started, pid {child.pid}")
    monitor = ResourceMonitor(child.pid, args.resources) if args.resources else None
    if monitor is not None:
        monitor.start()
    assert child.stdout is not None
    tee = threading.Thread(target=_tee, args=(child.stdout, args.train_log, sys.stdout.buffer))
    tee.start()
    code = child.wait()
    tee.join()
    if monitor is not None:
        monitor.stop()
    status = 128 - code if code < 0 else code
    _control(args.sidecar_log, f"training process exited with status {status}")
    _exited(args.exit_file, status)
    return _after_upload(args, status)


def _exited(exit_file: Path | None, status: int) -> None:
    """Record the exit status for the pod's sidecar (written whole, then renamed)."""
    if exit_file is not None:
        partial = exit_file.with_name(exit_file.name + ".partial")
        partial.write_text(str(status))
        partial.replace(exit_file)


def _after_upload(args: argparse.Namespace, status: int) -> int:
    """With ``--await-upload``: wait for the sidecar's final upload; then ``status``."""
    if args.await_upload is not None:
        _control(args.sidecar_log, "waiting for the sidecar's final upload")
        _await(args.await_upload, args.await_upload_seconds, args.sidecar_log, "a final upload")
    return status


def _await(path: Path, seconds: float, log: Path, what: str) -> None:
    """Wait until ``path`` exists, at most ``seconds`` (then say so and go on)."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > deadline:
            _control(log, f"no sign of {what} after {seconds:g}s; going on")
            return
        time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
