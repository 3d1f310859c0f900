"""What a training process's exit code means, for the supplemental log.

An out-of-memory kill at the node's memory limit and a kill after the stop grace period are
told apart by the launchers, which know them (``octotrain.supplemental_log`` says those
first); so a SIGKILL described here is one that neither explains, and its failure class is
``lost`` (``octotrain.failure_classes``): the words say the same."""

from __future__ import annotations

import signal

# The exit status of a node's wrapper that stopped its training as hung (agent/hang_watch.py:
# its log and METRICS had not advanced for the task's hang_detection.after_seconds): the node
# fails with the failure class "hung" even when the training, stopped, exited 0.
HUNG_EXIT_STATUS = 122

# Why a SIGKILL that no stop and no kill at the node's memory limit explains came.
SIGKILLED_CAUSE = (
    "no stop and no kill at its memory limit was recorded: another program, a person, or the "
    "machine's own out-of-memory killer"
)
_KNOWN = {
    0: "success",
    1: "the training program failed (general error)",
    2: "the training program was called wrongly (bad arguments or usage)",
    HUNG_EXIT_STATUS: "stopped as hung by its wrapper: its log and metrics had stopped advancing",
    126: "the command was found but could not be executed (permission or format)",
    127: "the command was not found in the image or on the PATH",
    137: f"killed by SIGKILL from outside the training ({SIGKILLED_CAUSE})",
    139: "segmentation fault (SIGSEGV)",
    143: "terminated by SIGTERM: the node was stopped",
}


def describe_exit_code(code: int) -> str:
    """A plain-words meaning of ``code``; negative codes are Python's "killed by signal N"."""
    if code < 0:
        return _describe_signal(-code)
    if code in _KNOWN:
        return _KNOWN[code]
    if code > 128:
        return _describe_signal(code - 128)
    return "the training program exited with an error"


def _describe_signal(number: int) -> str:
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    if number == signal.SIGKILL:
        return f"killed by {name} from outside the training ({SIGKILLED_CAUSE})"
    if number == signal.SIGTERM:
        return f"terminated by {name}: the node was stopped"
    return f"killed by {name}"
