"""Run the user's training command, teeing its output into the train log.

    python run_training.py --train-log PATH --sidecar-log PATH [--resources PATH]
        [--await-sidecar PATH] [--exit-file PATH [--await-upload PATH]]
        [--stop-grace-seconds S] [--max-training-seconds S] [--memory-cgroup DIR]
        [--address-space-limit BYTES] [--user UID --group GID] [--metric-extraction JSON]
        [--hang-after-seconds S [--stop-when-hung] [--hang-report PATH]]
        -- COMMAND [ARGS...]

Both launchers start the user's command through this wrapper so that the train log holds
exactly the program's stdout and stderr, the sidecar log records process control, and a stop
request (SIGTERM/SIGINT) reaches the whole training process group. The exit status is the
program's own (128 + N when it was killed by signal N), as a container runtime reports it.
With ``--await-sidecar`` the training starts once the pod's sidecar is ready (it then uploads
whatever happens, even if the training is killed at once); with ``--resources`` the resource
monitor samples the training process into that file; with
``--exit-file`` the exit status is also written there when the program ends, as JSON
(``exit_status``; ``start_error`` when the command could not be run; ``killed_after_grace_seconds``
when it ignored a stop): the launchers read why from it, a pod's sidecar waits for it to make
its final upload, and with ``--await-upload`` the wrapper then waits (at most
``--await-upload-seconds``) until the sidecar says it is done, so that the pod, which
Kubernetes ends once this container has, lives until ``OUTPUT`` is safe.

With ``--max-training-seconds`` the wrapper stops a training still running that long after it
started as if it had received SIGTERM (the grace period below leaves it time to save a
checkpoint), records ``time_limit`` in the exit file, and exits with status 124 (as
``timeout`` does) whatever the training's own: the node fails, naming the limit.

With ``--stop-grace-seconds`` a training still running that long after a SIGTERM is killed by
the wrapper itself (a pod's runtime would kill everything at the end of the pod's grace period,
leaving no word and no time for the final upload). The training may be confined before it
starts: into a memory cgroup (``--memory-cgroup``, whose limit the launcher set), under an
address-space limit (``--address-space-limit``, ``RLIMIT_AS``, where no cgroup is available),
and as another user (``--user``/``--group``, no supplementary groups): the launcher decides
what this machine allows.

With ``--metric-extraction`` (the algorithm's metric definitions, as
``octotrain.metric_definitions`` hands them over) the wrapper follows the train log while the
training runs and writes the charts the definitions' regexes find in it to ``$METRICS``
(``log_metrics.py``).

With ``--hang-after-seconds`` the wrapper reports a training whose log and ``METRICS`` have
not advanced that long while it runs (``hang_watch.py``); with ``--stop-when-hung`` it stops it
as the time limit does, records ``hung`` in the exit file and exits with status 122.

With ``--phase-file`` the wrapper records the node's phase (``training``, then ``uploading``)
and with ``--progress-file`` it samples the training's progress there (``node_progress.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from hang_watch import HUNG_EXIT_STATUS, watch_for_hangs
from log_metrics import LogMetricsExtractor, LogMetricsFollower
from node_progress import TrainingPhases
from resource_monitor import ResourceMonitor

# The wrapper's exit status when the training reached --max-training-seconds (the launchers
# know it as octotrain.time_limits.TIME_LIMIT_EXIT_STATUS; this folder imports nothing of
# Octotrain).
TIME_LIMIT_EXIT_STATUS = 124
# How often the train log is read for metric definitions: the charts lag it by at most this.
METRIC_EXTRACTION_SECONDS = 0.5
# How often the training's progress is sampled (node_progress.py).
PROGRESS_SAMPLE_SECONDS = 2.0


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
    parser.add_argument("--stop-grace-seconds", type=float)
    parser.add_argument("--max-training-seconds", type=float)
    parser.add_argument("--memory-cgroup", type=Path)
    parser.add_argument("--address-space-limit", type=int)
    parser.add_argument("--user", type=int)
    parser.add_argument("--group", type=int)
    parser.add_argument("--metric-extraction", type=json.loads, default=[])
    parser.add_argument("--phase-file", type=Path)
    parser.add_argument("--progress-file", type=Path)
    parser.add_argument("--hang-after-seconds", type=float)
    parser.add_argument("--stop-when-hung", action="store_true")
    parser.add_argument("--hang-report", type=Path)
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
        # reaches the whole training process tree, SIGKILL included. It is confined before
        # it runs anything; the wrapper has no other thread yet, so this is safe.
        child = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            preexec_fn=_confinement(args),
        )
    except (OSError, subprocess.SubprocessError) as error:
        return _not_started(args, command, error)

    exits = _ExitRecord(args.exit_file)

    def forward(signum: int, _frame: object) -> None:
        # In a container the runtime signals only PID 1 (this wrapper): pass the signal on to
        # the whole group, ignoring it here so the wrapper lives to record the exit status.
        _control(args.sidecar_log, f"received {signal.Signals(signum).name}; stopping training")
        signal.signal(signum, signal.SIG_IGN)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(os.getpgrp(), signum)
        if args.stop_grace_seconds is not None:
            grace = args.stop_grace_seconds
            kill = threading.Timer(grace, _kill_after_grace, (exits, grace, args.sidecar_log))
            kill.daemon = True
            kill.start()

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    _control(args.sidecar_log, f"training process started, pid {child.pid}")
    limit = _time_limit(args.max_training_seconds, exits, args.sidecar_log)
    monitor = ResourceMonitor(child.pid, args.resources) if args.resources else None
    if monitor is not None:
        monitor.start()
    extraction = _metric_extraction(args.metric_extraction, args.train_log, args.sidecar_log)
    phases = TrainingPhases(
        phase_file=args.phase_file,
        samples=args.progress_file,
        metrics=os.environ.get("METRICS"),
        every=PROGRESS_SAMPLE_SECONDS,
    )
    for problem in phases.started():
        _control(args.sidecar_log, problem)
    hang = watch_for_hangs(
        hang_after_seconds=args.hang_after_seconds,
        stop_when_hung=args.stop_when_hung,
        train_log=args.train_log,
        metrics=Path(os.environ["METRICS"]) if os.environ.get("METRICS") else None,
        report=args.hang_report,
        note=lambda message: _control(args.sidecar_log, message),
        stop=lambda facts: _stop_as_hung(exits, facts),
    )
    assert child.stdout is not None
    tee = threading.Thread(target=_tee, args=(child.stdout, args.train_log, sys.stdout.buffer))
    tee.start()
    code = child.wait()
    if limit is not None:
        limit.cancel()
    if hang is not None:
        hang.stop()
    tee.join()
    if monitor is not None:
        monitor.stop()
    if extraction is not None:
        _stop_extraction(extraction, args.sidecar_log)
    for problem in phases.ended():
        _control(args.sidecar_log, problem)
    status = 128 - code if code < 0 else code
    _control(args.sidecar_log, f"training process exited with status {status}")
    exits.record({"exit_status": status})
    forced = HUNG_EXIT_STATUS if "hung" in exits.facts else TIME_LIMIT_EXIT_STATUS
    return _after_upload(args, forced if exits.facts else status)


def _metric_extraction(
    extraction: list[dict[str, Any]], train_log: Path, sidecar_log: Path
) -> LogMetricsFollower | None:
    """Start following the train log for the algorithm's metric definitions, if it has any
    and the training has a METRICS folder (a failure to write there is noted, not fatal)."""
    folder = os.environ.get("METRICS")
    if not extraction or not folder:
        return None
    try:
        extractor = LogMetricsExtractor(Path(folder), extraction, os.environ.get("TASK_ID", ""))
    except OSError as error:
        _control(sidecar_log, f"metric definitions not extracted: {error}")
        return None
    follower = LogMetricsFollower(train_log, extractor, METRIC_EXTRACTION_SECONDS)
    follower.start()
    names = ", ".join(chart.name for chart in extractor.charts)
    _control(sidecar_log, f"extracting charts {names} from the train log")
    return follower


def _stop_extraction(follower: LogMetricsFollower, sidecar_log: Path) -> None:
    error = follower.stop()
    if error is not None:
        _control(sidecar_log, f"metric extraction stopped early: {error}")


class _ExitRecord:
    """The exit file, written once: by the main thread when the training ends, or by the
    grace-period timer just before it kills the training (and this wrapper with it)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.facts: dict[str, Any] = {}  # added to the report, however it is written
        self._lock = threading.Lock()
        self._written = False

    def record(self, report: dict[str, Any], then: Callable[[], None] | None = None) -> None:
        with self._lock:
            if self._written:
                return
            self._written = True
            _exited(self.path, report | self.facts)
            if then is not None:
                then()


def _kill_after_grace(exits: _ExitRecord, grace: float, sidecar_log: Path) -> None:
    def kill() -> None:
        _control(sidecar_log, f"the training ignored SIGTERM for {grace:g}s: killing it (SIGKILL)")
        os.killpg(os.getpgrp(), signal.SIGKILL)  # this wrapper too: it has nothing left to do

    exits.record({"exit_status": 137, "killed_after_grace_seconds": grace}, then=kill)


def _time_limit(
    seconds: float | None, exits: _ExitRecord, sidecar_log: Path
) -> threading.Timer | None:
    """Stop the training once it has run ``seconds``, as a SIGTERM to this wrapper would (the
    handler passes it on and starts the grace period), noting the limit in the exit file."""
    if seconds is None:
        return None

    def reached() -> None:
        exits.facts["time_limit"] = {"name": "max_training_seconds", "seconds": seconds}
        _control(sidecar_log, f"the training reached its time limit of {seconds:g}s "
                              "(max_training_seconds): stopping it")  # fmt: skip
        os.kill(os.getpid(), signal.SIGTERM)

    timer = threading.Timer(seconds, reached)
    timer.daemon = True
    timer.start()
    return timer


def _stop_as_hung(exits: _ExitRecord, facts: dict[str, float]) -> None:
    """Stop a hung training as a SIGTERM to this wrapper would, unless a stop is already under
    way (the handler ignores SIGTERM once it has passed one on): a training silent while it
    saves in a stop's grace period was stopped, not hung."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_IGN or exits.facts:
        return
    exits.facts["hung"] = facts
    os.kill(os.getpid(), signal.SIGTERM)


def _confinement(args: argparse.Namespace) -> Callable[[], None] | None:
    """What the training's process does before it runs the command, in this order: enter the
    memory cgroup and lower its address space while it may (as the launcher's user), then
    become the task's user."""
    if args.memory_cgroup is None and args.address_space_limit is None and args.user is None:
        return None

    def confine() -> None:
        if args.memory_cgroup is not None:
            (args.memory_cgroup / "cgroup.procs").write_text(str(os.getpid()))
        if args.address_space_limit is not None:
            limit = args.address_space_limit
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        if args.user is not None:
            os.setgroups([])
            os.setgid(args.group if args.group is not None else args.user)
            os.setuid(args.user)

    return confine


def _not_started(args: argparse.Namespace, command: list[str], error: Exception) -> int:
    """The command could not be run: say why in both logs and in the exit file."""
    if isinstance(error, OSError):
        detail = error.strerror or str(error)
        why = f"its command {command[0]!r} could not be run ({detail})"
        status = 127 if isinstance(error, FileNotFoundError) else 126
    else:  # the confinement failed in the child, before the command ran
        detail = f"the memory limit or the user could not be applied ({error})"
        why = f"{detail} before it ran"
        status = 126
    message = f"cannot start {command[0]}: {detail}"
    with args.train_log.open("a", encoding="utf-8") as handle:
        handle.write(message + "\n")
    _control(args.sidecar_log, message)
    _exited(args.exit_file, {"exit_status": status, "start_error": why})
    return _after_upload(args, status)


def _exited(exit_file: Path | None, report: dict[str, Any]) -> None:
    """Record how the training ended (written whole, then renamed)."""
    if exit_file is not None:
        partial = exit_file.with_name(exit_file.name + ".partial")
        partial.write_text(json.dumps(report))
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
