"""``collect_logs``: after every node has ended, however it ended, keep its logs and metrics.

The run folder is local to the machine that ran the nodes; the object store is what the log
and metrics pages read once the run is over, so everything is copied there. The run's pins on
node-cache entries are released: its inputs may now be evicted. The catalog run
is marked failed (or stopped, when the run was stopped) here when any node did not succeed,
since ``archive_model`` will not run; its message is the first line of the supplemental log of
the node that ended the run. A node that did not succeed and whose stages left no word (its
launch task lost with its worker) gets its supplemental log here, so that every one has one.
"""

from __future__ import annotations

from airflow.sdk import Context

from hooks.chart_series_index import index_node_charts
from hooks.local_process import RunAbortMarker
from hooks.node_cache import NodeCache
from hooks.object_store import default_object_store, upload_folder
from hooks.run_stops import end_unsuccessful_run
from octotrain.run_layout import RunLayout
from octotrain.settings import get_settings
from octotrain.supplemental_log import NodeEnding, first_line
from operators.node_endings import record_ending
from operators.training_stage import TrainingStageOperator


class CollectLogsOperator(TrainingStageOperator):
    ui_color = "#f3eefa"

    def execute(self, context: Context) -> dict[str, object]:
        plan = self.run_plan(context)
        layout = self.layout(plan)
        store = default_object_store()
        reasons = {
            node_index: reason
            for node_index in plan.node_indices
            if (reason := _reason_of(layout, node_index)) is not None
        }
        logs = upload_folder(store, layout.logs_dir, layout.objects.logs)
        metrics = charts = 0
        for node_index in plan.node_indices:
            folder = layout.node_folders(node_index).metrics
            if folder.is_dir():
                metrics += len(upload_folder(store, folder, layout.objects.metrics(node_index)))
                # the charts' columns, so that the Metrics page's first visit parses nothing
                charts += len(index_node_charts(store, layout.objects, node_index, folder=folder))
            samples = layout.resources_path(node_index)
            if samples.is_file():
                store.put_file(layout.objects.resources(node_index), samples)
        failed = list(reasons)
        if failed:
            flag = RunAbortMarker(layout.run_dir).flag()
            end_unsuccessful_run(
                run_id=plan.catalog_run_id, reasons=reasons, flag=flag, store=store
            )
        settings = get_settings()
        NodeCache(settings.node_cache_dir, max_bytes=0).unpin(layout.cache_holder(""))
        self.log.info(
            "collected %d log files and %d metrics files to %s (%d charts indexed)",
            len(logs), metrics, store.url, charts,
        )  # fmt: skip
        return {"logs": [info.key for info in logs], "failed_nodes": failed}


def _reason_of(layout: RunLayout, node_index: str) -> str | None:
    """The first line of the node's supplemental log, or None when it succeeded. A node that
    did not succeed and has none (its launch task never recorded an end: lost with its worker,
    or an unexpected error before it) gets one here."""
    outcome = layout.read_outcome(node_index)
    if outcome is not None and outcome.get("exit_code") == 0 and outcome.get("reason") is None:
        return None
    supplemental = layout.log_path(layout.log_names(node_index).supplemental)
    if supplemental.is_file():
        return first_line(supplemental.read_text(encoding="utf-8", errors="replace"))
    unknown = (
        "no stage recorded how it ended (its launch task was lost, or failed before it started "
        "the node: see Airflow's logs of stage_data and launch)"
    )
    return record_ending(layout, NodeEnding(node_index, start_error=unknown))
