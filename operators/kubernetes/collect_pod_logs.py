"""``collect_logs`` with the Kubernetes launcher: after every node's pod has ended, however it
ended, make sure the four log files of every node are in the object store, explain abnormal
ends in the supplemental logs (the run's message in the catalog is the first line of the node's
that ended the run), with each end's failure class and what was done about it, and how a node's
earlier starts ended when the run was restarted (``octotrain.restarts``), then delete the run's
remaining pods.

The pods' sidecars have already synced the logs and metrics; what only the cluster knows (a
pod that could not be scheduled, an image that could not be pulled, an OOM kill, an eviction)
is read from the pod's status and events here, before the pod is deleted: failed pods are
kept by ``launch`` for this.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import Context

from hooks.kubernetes.kubernetes_runs import KubernetesRuns
from hooks.kubernetes.pod_launcher import pod_run_files
from hooks.run_stops import end_unsuccessful_run
from hooks.runs.chart_series_index import index_node_charts
from hooks.runs.run_abort import RunAbortMarker
from hooks.runs.run_restarts import RunRestarts
from hooks.storage.object_store import default_object_store
from octotrain.contracts import NodeLogNames
from octotrain.exit_reports import ExitReport
from octotrain.failure_classes import pod_end_class
from octotrain.kubernetes_config import kubernetes_config
from octotrain.planning import RunPlan
from octotrain.pod_diagnosis import NodeEnd, diagnose
from octotrain.pods import LABEL_NODE, LABEL_RUN, pod_deadline, run_label
from octotrain.restarts import supplemented, what_was_done
from octotrain.run_files import RunFiles, read_text, tail
from octotrain.secrets import masked_text
from octotrain.settings import get_settings
from octotrain.supplemental_log import (
    TAIL_READ_BYTES,
    SupplementalLog,
    last_sampled_memory,
    staging_error_in,
)
from operators.training_stage import TrainingStageOperator, with_real_secrets


class CollectPodLogsOperator(TrainingStageOperator):
    ui_color = "#f3eefa"

    def execute(self, context: Context) -> dict[str, Any]:
        plan = self.run_plan(context)
        settings = get_settings()
        store = default_object_store()
        objects = plan.objects
        runs = KubernetesRuns(
            conn_id=settings.kubernetes_conn_id, namespace=settings.kubernetes_namespace
        )
        files = pod_run_files(objects)
        abort, restarts = RunAbortMarker(files), RunRestarts(files)
        flag = abort.flag()
        reasons: dict[str, str] = {}
        for node_index in plan.node_indices:
            names = NodeLogNames(task_id=plan.task_id, node_index=node_index)
            pods = runs.pods({LABEL_RUN: run_label(plan), LABEL_NODE: node_index})
            pod = pods[-1] if pods else None
            events = runs.events(pod["metadata"]["name"]) if pod else []
            report = ExitReport.parse(read_text(files, objects.exit_report(node_index)))
            stop_reason = abort.stopped_because(node_index)
            failed = not _ended_well(report, stop_reason)
            init_log = (read_text(files, objects.log(names.init)) or "") if failed else ""
            _ensure_logs(files, names)
            # the charts' columns, from what the sidecar synced: the Metrics page parses nothing
            index_node_charts(store, files, node_index)
            earlier = tuple(restarts.notes(node_index))
            if failed:
                log = self._supplemental(
                    files, plan, names, pod, events, stop_reason, report, init_log
                )
                reasons[node_index] = log.reason
                failure = pod_end_class(
                    pod,
                    stopped=stop_reason is not None,
                    time_limited=_time_limited(report, pod),
                    hung=report.hung is not None,
                    staging_error=staging_error_in(init_log),
                )
                counted = restarts.counted(restarts.latest())
                done = what_was_done(failure, attempt=counted, max_restarts=plan.max_node_restarts)
                log = supplemented(log, (*earlier, done))
                files.write(objects.log(names.supplemental), log.render().encode())
                self.log.warning("%s", log.reason)
            elif earlier:  # it ended well, after the run's restarts: how its starts ended
                restarted = SupplementalLog(
                    f"node {node_index} ended normally after the run was restarted", earlier
                )
                files.write(objects.log(names.supplemental), restarted.render().encode())
            for found in pods:
                runs.delete_pod(
                    found["metadata"]["name"], grace_seconds=int(settings.stop_grace_seconds)
                )
        if reasons:
            end_unsuccessful_run(run_id=plan.catalog_run_id, reasons=reasons, flag=flag)
        return {"failed_nodes": list(reasons)}

    def _supplemental(
        self,
        files: RunFiles,
        plan: RunPlan,
        names: NodeLogNames,
        pod: dict[str, Any] | None,
        events: list[dict[str, Any]],
        stop_reason: str | None,
        report: ExitReport,
        init_log: str,
    ) -> SupplementalLog:
        """The supplemental log of a node that did not end well, from its pod, events, its
        wrapper's exit ``report`` and its init container's log."""
        objects, node_index = plan.objects, names.node_index
        assert plan.resources is not None
        end = NodeEnd(
            node_index=node_index,
            memory_limit_mib=plan.resources.memory_mib,
            last_memory_bytes=last_sampled_memory(
                read_text(files, objects.resources(node_index)) or ""
            ),
            stop_reason=stop_reason,
            startup_timeout_seconds=kubernetes_config().startup_timeout_seconds,
            exit_report=report,
            init_log=init_log,
            max_wait_seconds=plan.max_wait_seconds,
            max_training_seconds=plan.max_training_seconds,
            active_deadline_seconds=pod_deadline(
                plan,
                config=kubernetes_config(),
                grace_seconds=int(get_settings().stop_grace_seconds),
            ),
            checkpoint_synced=files.size(objects.checkpoint_manifest(node_index)) is not None,
            train_log_tail=_masked_tail(files, plan, objects.log(names.train)),
        )
        return diagnose(pod, events, end)


def _ended_well(report: ExitReport, stop_reason: str | None) -> bool:
    """The training exited 0 by itself: not stopped, and not by its wrapper (time, hang)."""
    return report.exit_status == 0 and stop_reason is None and not report.stopped_by_wrapper


def _time_limited(report: ExitReport, pod: dict[str, Any] | None) -> bool:
    """Whether a time limit ended the node: its wrapper's (its exit ``report`` says which) or
    the pod's deadline, which backs it up."""
    reason = ((pod or {}).get("status") or {}).get("reason")
    return report.time_limit is not None or reason == "DeadlineExceeded"


def _ensure_logs(files: RunFiles, names: NodeLogNames) -> None:
    """The three always-present log files exist, empty if the node never ran."""
    for name in names.always():
        files.create(files.objects.log(name), b"")


def _masked_tail(files: RunFiles, plan: RunPlan, key: str) -> str:
    """The last ``TAIL_READ_BYTES`` of a node's train log, the run's secret values masked;
    empty when the log is not there."""
    text = tail(files, key, TAIL_READ_BYTES).decode(errors="replace")
    secrets = with_real_secrets(plan).secret_values() if plan.has_secrets else {}
    return masked_text(text, [value for values in secrets.values() for value in values.values()])
