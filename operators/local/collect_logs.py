"""``collect_logs``: after every node has ended, however it ended, keep its logs and metrics.

The run folder is local to the machine that ran the nodes; the object store is what the log
and metrics pages read once the run is over, so the folder is uploaded to the run's prefix as
it is (its paths are the run's keys), all but the nodes' working folders. The run's pins on
node-cache entries are released: its inputs may now be evicted. The catalog run
is marked failed (or stopped, when the run was stopped) here when any node did not succeed,
since ``archive_model`` will not run; its message is the first line of the supplemental log of
the node that ended the run. A node that did not succeed and whose stages left no word (its
launch task lost with its worker) gets its supplemental log here, so that every one has one.
"""

from __future__ import annotations

from airflow.sdk import Context

from hooks.inputs.node_cache import NodeCache
from hooks.run_stops import end_unsuccessful_run
from hooks.runs.chart_series_index import index_node_charts
from hooks.runs.run_abort import RunAbortMarker
from hooks.storage.object_store import default_object_store, upload_folder
from octotrain.contracts import NodeLogNames
from octotrain.run_files import RunFiles, read_text
from octotrain.settings import get_settings
from octotrain.supplemental_log import NodeEnding, first_line
from operators.local.node_endings import record_ending, recorded_outcome
from operators.training_stage import TrainingStageOperator


class CollectLogsOperator(TrainingStageOperator):
    ui_color = "#f3eefa"

    def execute(self, context: Context) -> dict[str, object]:
        plan = self.run_plan(context)
        layout = self.layout(plan)
        files = self.run_files(plan)
        store = default_object_store()
        reasons = {
            node_index: reason
            for node_index in plan.node_indices
            if (reason := _reason_of(files, node_index)) is not None
        }
        uploaded = upload_folder(store, layout.run_dir, layout.objects.prefix,
                                 skip=layout.nodes_dir)  # fmt: skip
        logs = [info for info in uploaded if info.key.startswith(f"{layout.objects.logs}/")]
        charts = 0
        for node_index in plan.node_indices:
            # the charts' columns, so that the Metrics page's first visit parses nothing
            charts += len(index_node_charts(store, files, node_index))
        failed = list(reasons)
        if failed:
            flag = RunAbortMarker(files).flag()
            end_unsuccessful_run(run_id=plan.catalog_run_id, reasons=reasons, flag=flag)
        settings = get_settings()
        NodeCache(settings.node_cache_dir, max_bytes=0).unpin(layout.cache_holder(""))
        self.log.info(
            "collected %d files (%d logs) to %s (%d charts indexed)",
            len(uploaded), len(logs), store.url, charts,
        )  # fmt: skip
        return {"logs": [info.key for info in logs], "failed_nodes": failed}


def _reason_of(files: RunFiles, node_index: str) -> str | None:
    """The first line of the node's supplemental log, or None when it succeeded. A node that
    did not succeed and has none (its launch task never recorded an end: lost with its worker,
    or an unexpected error before it) gets one here."""
    outcome = recorded_outcome(files, node_index)
    if outcome is not None and outcome.get("exit_code") == 0 and outcome.get("reason") is None:
        return None
    name = NodeLogNames(task_id=files.objects.task_id, node_index=node_index).supplemental
    supplemental = read_text(files, files.objects.log(name))
    if supplemental is not None:
        return first_line(supplemental)
    unknown = (
        "no stage recorded how it ended (its launch task was lost, or failed before it started "
        "the node: see Airflow's logs of stage_data and launch)"
    )
    return record_ending(files, NodeEnding(node_index, start_error=unknown))
