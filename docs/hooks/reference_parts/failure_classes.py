"""The ``failure-classes`` part (docs/concepts/limits-retries-hangs.md): every
``octotrain.failure_classes.FailureClass``, what ends a node with it and whether it is retried,
with the restart limits of ``octotrain.restarts``."""

from __future__ import annotations

from .markdown import prose_cell


def failure_classes_reference() -> str:
    """Every failure class: what ends a node with it, whether it is retried and whether that
    counts against ``max_node_restarts``, and its words in the supplemental log."""
    from octotrain.failure_classes import FailureClass
    from octotrain.restarts import (
        CLASS_LINE,
        DEFAULT_MAX_NODE_RESTARTS,
        MAX_NODE_RESTARTS,
        MAX_RUN_RESTARTS,
        what_was_done,
    )

    rows = [
        "| class | what ends the node | retried | in words |",
        "|---|---|---|---|",
    ]
    for failure in FailureClass:
        if not failure.retried:
            retried = "no"
        elif failure.counted:
            retried = "yes, counted against `max_node_restarts`"
        else:
            retried = "yes, not counted against `max_node_restarts`"
        causes, words = prose_cell(failure.causes()), prose_cell(failure.in_words())
        rows.append(f"| `{failure}` | {causes} | {retried} | {words} |")
    example = what_was_done(FailureClass.LOST, attempt=0, max_restarts=DEFAULT_MAX_NODE_RESTARTS)
    return (
        "\n".join(rows) + "\n\n"
        f"The supplemental log's line reads `{CLASS_LINE}<class>: <in words>` and what was "
        f"done (`{example}`). A task's `max_node_restarts` is 0 to {MAX_NODE_RESTARTS} "
        f"({DEFAULT_MAX_NODE_RESTARTS} when absent); a run is restarted at most "
        f"{MAX_RUN_RESTARTS} times in all, preemptions included.\n"
    )
