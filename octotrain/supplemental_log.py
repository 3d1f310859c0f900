"""A node's supplemental log (``octopus-train-{id}-{index}-supplemental.logs``): why it did not
end normally, in words, composed here for both launchers from what each of them observed.

Line 1 is the reason, what a person needs first and what the run's message in the catalog
carries; line 2 says when it was written; the lines after it are details (the exit status and
its meaning, where to look next). A node that ended normally has no supplemental log.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from octotrain.exit_codes import describe_exit_code
from octotrain.hang_detection import HUNG, HungNode
from octotrain.time_limits import ReachedLimit

MIB = 1024 * 1024
# How much of the end of a failed node's train log its supplemental log quotes (the manual
# calls the supplemental log the error output): the last lines, each cut to a length.
TAIL_LINES = 20
TAIL_LINE_CHARS = 300
TAIL_HEADING = "the last lines of the train log:"
# How much of a log's end a launcher reads for it (and to recognise a failed allocation).
TAIL_READ_BYTES = 64 * 1024
# How many node names the run's message lists before it only counts the others.
MESSAGE_NODE_NAMES = 8
# The init log's line for a failed staging (operators/local/stage_data.py,
# hooks/kubernetes/pod_node.py).
_STAGING_FAILED = re.compile(r"ERROR staging failed: (.+)$")
# What programs print when an allocation fails (Python, C, C++, Rust, the JVM).
_ALLOCATION_FAILED = re.compile(
    r"MemoryError|Cannot allocate memory|std::bad_alloc|memory allocation of \d+ bytes failed"
    r"|OutOfMemoryError|out of memory",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class MemoryExhaustion:
    """The training went over its memory limit: ``enforced_by`` is what held it there
    (``OOMKilled`` on Kubernetes; ``memory cgroup`` or ``RLIMIT_AS`` locally)."""

    limit_mib: int
    enforced_by: str
    last_sample_bytes: int | None = None


@dataclass(frozen=True)
class NodeEnding:
    """What a launcher knows about how one node ended. ``exit_code`` is None when the
    training never ran; ``stop_reason`` is the full first line of a stop
    (``AbortFlag.why_stopped``)."""

    node_index: str
    exit_code: int | None = None
    stop_reason: str | None = None
    start_error: str | None = None
    staging_error: str | None = None
    killed_after_grace_seconds: float | None = None
    out_of_memory: MemoryExhaustion | None = None
    # The time limit that stopped it (``octotrain.time_limits``).
    time_limit: ReachedLimit | None = None
    # The hang its wrapper stopped it for (``octotrain.hang_detection``).
    hung: HungNode | None = None
    # Whether the node's checkpoint is in the object store: only then can a resume restore it.
    checkpoint_synced: bool = False
    # The end of the node's train log, its secrets already masked (quoted by ``explain``).
    train_log_tail: str = ""


@dataclass(frozen=True)
class SupplementalLog:
    reason: str
    details: tuple[str, ...] = ()
    # The train log's last lines (``quoted_tail``), after every detail.
    tail: tuple[str, ...] = ()

    def render(self, written_at: datetime | None = None) -> str:
        stamp = (written_at or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return "\n".join([self.reason, f"written {stamp}", *self.details, *self.tail]) + "\n"


def quoted_tail(text: str) -> tuple[str, ...]:
    """The last ``TAIL_LINES`` non-empty lines of a train log's end, each cut to
    ``TAIL_LINE_CHARS``, under a heading; nothing when the log is empty. ``text`` is a log's
    last ``TAIL_READ_BYTES`` at most: when it is that long, its first line may be cut, and is
    left out."""
    lines = text.splitlines()
    if len(text.encode()) >= TAIL_READ_BYTES:
        lines = lines[1:]
    kept = [line for line in lines if line.strip()][-TAIL_LINES:]
    if not kept:
        return ()
    cut = [line if len(line) <= TAIL_LINE_CHARS else line[:TAIL_LINE_CHARS] + " …" for line in kept]
    return (TAIL_HEADING, *(f"  | {line}" for line in cut))


def first_line(text: str) -> str:
    """The reason a supplemental log gives (its first line)."""
    return text.split("\n", 1)[0]


def explain(ending: NodeEnding) -> SupplementalLog | None:
    """The node's supplemental log, or None when it ended normally; where its training ran,
    it ends with the last lines of its train log."""
    log = _explained(ending)
    if log is None or ending.exit_code is None:
        return log
    return replace(log, tail=quoted_tail(ending.train_log_tail))


def _explained(ending: NodeEnding) -> SupplementalLog | None:
    node = f"node {ending.node_index}"
    status = _status_details(ending.exit_code)
    if ending.staging_error is not None:
        return SupplementalLog(
            f"{node} did not start: staging failed because {ending.staging_error}",
            ("the init log says what was staged before it failed",),
        )
    if ending.start_error is not None:
        return SupplementalLog(f"{node} failed to start because {ending.start_error}", status)
    if ending.time_limit is not None:
        return _time_limited(
            node, ending.time_limit, ending.killed_after_grace_seconds, ending.checkpoint_synced
        )
    if ending.hung is not None:
        return _hung(node, ending.hung, ending.killed_after_grace_seconds, ending.checkpoint_synced)
    if ending.stop_reason is not None or ending.killed_after_grace_seconds is not None:
        return _stopped(node, ending, status)
    if ending.out_of_memory is not None:
        return SupplementalLog(_out_of_memory(node, ending.out_of_memory, ending.exit_code))
    if ending.exit_code is None:
        return SupplementalLog(f"{node} ended without an exit status: its process was lost")
    if ending.exit_code == 0:
        return None
    return SupplementalLog(
        f"{node} failed with exit code {ending.exit_code}: {describe_exit_code(ending.exit_code)}"
    )


def _stopped(node: str, ending: NodeEnding, status: tuple[str, ...]) -> SupplementalLog:
    reason = ending.stop_reason or f"{node} was stopped from outside Octotrain (SIGTERM)"
    grace = ending.killed_after_grace_seconds
    if grace is None:
        return SupplementalLog(reason, status)
    forced = f"it ignored SIGTERM and was killed after the grace period of {grace:g} s"
    return SupplementalLog(f"{reason}; {forced}", (f"exit code 137: {forced} (SIGKILL)",))


def resume_hint(checkpoint_synced: bool) -> str:
    """What a person can do next about a node's checkpoint: resume from it, or, where none was
    synced (``octotrain task resume`` would refuse), write one next time."""
    if checkpoint_synced:
        return "the run can be resumed from its last checkpoint (octotrain task resume)"
    return (
        "no checkpoint was synced (nothing was written to CHECKPOINT), so the run cannot be "
        "resumed: it can only be run again from the start"
    )


def _time_limited(
    node: str, limit: ReachedLimit, grace: float | None, checkpoint_synced: bool
) -> SupplementalLog:
    reason = (
        f"{node} reached its time limit: {limit.in_words()}; it was sent SIGTERM and given the "
        "grace period to save a checkpoint"
    )
    if grace is not None:
        reason += f"; it ignored SIGTERM and was killed after the grace period of {grace:g} s"
    return SupplementalLog(reason, (resume_hint(checkpoint_synced),))


def _hung(
    node: str, hung: HungNode, grace: float | None, checkpoint_synced: bool
) -> SupplementalLog:
    reason = (
        f"{node} was stopped as hung: {hung.in_words()}; it was sent SIGTERM and given the "
        "grace period to save a checkpoint"
    )
    if grace is not None:
        reason += f"; it ignored SIGTERM and was killed after the grace period of {grace:g} s"
    return SupplementalLog(
        reason,
        (
            f"failure class {HUNG}: not retried (a hang is the training's own); the train log's "
            "last lines show where it stopped",
            resume_hint(checkpoint_synced),
        ),
    )


def _out_of_memory(node: str, exhaustion: MemoryExhaustion, exit_code: int | None) -> str:
    code = f"exit code {exit_code}" if exit_code is not None else "no exit status"
    used = (
        f"; the last sample used {exhaustion.last_sample_bytes / MIB:.0f} MiB"
        if exhaustion.last_sample_bytes is not None
        else ""
    )
    if exhaustion.enforced_by == "RLIMIT_AS":
        # The limit made an allocation fail; the program itself then gave up.
        return (
            f"{node} ran out of its memory limit of {exhaustion.limit_mib} MiB (RLIMIT_AS) and "
            f"exited with {code}{used}"
        )
    return (
        f"{node} ran out of memory: it used more than its memory limit of "
        f"{exhaustion.limit_mib} MiB and was killed ({exhaustion.enforced_by}, {code}){used}"
    )


def _status_details(exit_code: int | None) -> tuple[str, ...]:
    if exit_code is None:
        return ("the training process was never started",)
    return (f"exit code {exit_code}: {describe_exit_code(exit_code)}",)


def run_message(reasons: Mapping[str, str], *, culprit: str | None = None) -> str:
    """The catalog run's message when nodes did not end normally: the first line of the node
    that ended the run (``culprit``, else the first), and which nodes did not succeed."""
    lead = reasons.get(culprit or "") or next(iter(reasons.values()))
    if len(reasons) == 1:
        return lead
    names = list(reasons)
    listed = ", ".join(names[:MESSAGE_NODE_NAMES])
    if len(names) > MESSAGE_NODE_NAMES:
        listed += f" and {len(names) - MESSAGE_NODE_NAMES} more"
    return f"{lead} (nodes that did not succeed: {listed})"


def staging_error_in(init_log: str) -> str | None:
    """Why staging failed, as the init log said it, or None if it did not say so."""
    for line in reversed(init_log.splitlines()):
        found = _STAGING_FAILED.search(line)
        if found is not None:
            return found.group(1)
    return None


def allocation_failed(train_log_tail: str) -> bool:
    """Whether the end of a training's log shows a failed memory allocation (the sign of an
    address-space limit, ``RLIMIT_AS``, that stopped it)."""
    return _ALLOCATION_FAILED.search(train_log_tail) is not None


def last_sampled_memory(samples: str) -> int | None:
    """The memory (bytes) of the last resource sample in ``samples`` (the resource monitor's
    JSON lines), if any; a torn last line is skipped."""
    for line in reversed(samples.splitlines()):
        try:
            sample = json.loads(line)
        except ValueError:
            continue
        if isinstance(sample, dict) and "memory_bytes" in sample:
            return int(sample["memory_bytes"])
    return None
