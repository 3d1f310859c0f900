"""How a node ended, kept among the run's files by whichever stage saw it end (``stage_data``
when staging failed, ``launch`` or ``collect_logs`` otherwise): its outcome, which
``collect_logs`` reads, and, when it did not end normally, its supplemental log
(``octotrain.supplemental_log``).
"""

from __future__ import annotations

from octotrain.contracts import NodeLogNames
from octotrain.restarts import supplemented
from octotrain.run_files import RunFiles, read_json, write_json
from octotrain.supplemental_log import NodeEnding, explain


def record_ending(
    files: RunFiles, ending: NodeEnding, *, details: tuple[str, ...] = ()
) -> str | None:
    """Write how the node ended; the first line of its supplemental log, or None when it ended
    normally (it then has none). ``details`` follow the log's own: how the node's earlier starts
    ended, its failure class and what was done about it (left out when the log's own lines name
    its class already). Each file is written whole: the log pages may be reading."""
    node_index, objects = ending.node_index, files.objects
    log = explain(ending)
    if log is not None:
        log = supplemented(log, details)
        name = NodeLogNames(task_id=objects.task_id, node_index=node_index).supplemental
        files.write(objects.log(name), log.render().encode("utf-8"))
    reason = log.reason if log is not None else None
    outcome = {"exit_code": ending.exit_code, "reason": reason}
    write_json(files, objects.outcome(node_index), outcome)
    return reason


def recorded_outcome(files: RunFiles, node_index: str) -> dict[str, object] | None:
    """How the node ended as ``record_ending`` wrote it; None when no stage did."""
    outcome = read_json(files, files.objects.outcome(node_index))
    return outcome if isinstance(outcome, dict) else None
