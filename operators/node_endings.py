"""How a node of the local launcher ended, kept in the run folder by whichever stage saw it end
(``stage_data`` when staging failed, ``launch`` otherwise): its outcome, which ``collect_logs``
reads, and, when it did not end normally, its supplemental log (``octotrain.supplemental_log``).
"""

from __future__ import annotations

import os

from octotrain.restarts import supplemented
from octotrain.run_layout import RunLayout
from octotrain.supplemental_log import NodeEnding, explain


def record_ending(
    layout: RunLayout, ending: NodeEnding, *, details: tuple[str, ...] = ()
) -> str | None:
    """Write how the node ended; the first line of its supplemental log, or None when it ended
    normally (it then has none). ``details`` follow the log's own: how the node's earlier starts
    ended, its failure class and what was done about it (left out when the log's own lines name
    its class already). Written whole, then renamed: the log pages may be reading."""
    node_index = ending.node_index
    log = explain(ending)
    if log is not None:
        log = supplemented(log, details)
        path = layout.log_path(layout.log_names(node_index).supplemental)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
        partial.write_text(log.render(), encoding="utf-8")
        partial.replace(path)
    reason = log.reason if log is not None else None
    layout.write_outcome(node_index, {"exit_code": ending.exit_code, "reason": reason})
    return reason
