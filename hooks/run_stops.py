"""Stopping a run on a user's request: its abort flag goes up, naming the user, where the
configured launcher keeps the run's files (the run folder, or the object store for pods). Every
node then stops within a few seconds (its process or its pod, with the grace period), nodes not
yet started do not start, ``collect_logs`` keeps every log and writes the supplemental logs
("stopped by <user>"), and the run ends ``stopped``.

Airflow 3 has no stopped state for a DAG run: the stopped nodes' launch tasks end failed,
saying who stopped them, so the DAG run ends failed rather than a green success, and the note
the caller puts on it says it was stopped, by whom and when (``RunStop.note``): the plugin
in-process (``hooks.airflow.dag_runs.add_run_note``), the command line through Airflow's REST API.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from hooks.launchers import configured_launcher, progress_of
from hooks.runs.run_abort import RunAbortMarker
from hooks.storage.catalog import default_catalog
from octotrain.abort_flags import AbortFlag, stop_note
from octotrain.catalog.models import Run, RunState
from octotrain.planning import run_key
from octotrain.run_layout import RunLayout
from octotrain.run_lifecycle import end_run
from octotrain.settings import get_settings
from octotrain.supplemental_log import run_message


@dataclass(frozen=True)
class RunStop:
    """A stop request: the flag that holds (an earlier one stays: another user's stop, or a
    node's failure), and the note for the run's DAG run in Airflow when this request's stop
    is the one that holds (None otherwise: the run was not stopped by this request)."""

    flag: AbortFlag
    note: str | None


def request_stop(run: Run, *, by: str) -> RunStop:
    """Raise ``run``'s abort flag for ``by``."""
    now = datetime.now(UTC)
    return raise_stop_flag(run, AbortFlag.stopped_by(by, at=now), note=stop_note(user=by, at=now))


def raise_stop_flag(run: Run, requested: AbortFlag, *, note: str | None = None) -> RunStop:
    """Raise ``run``'s abort flag ``requested`` (a user's stop, a sweep's pruning) unless one
    is up already; ``note`` is for its DAG run in Airflow when this one holds (none: a sweep's
    trial, whose DAG run was noted as its trial when it was triggered)."""
    layout = RunLayout(get_settings().runs_dir, run.task_id, run_key(run.airflow_run_id))
    marker = RunAbortMarker(configured_launcher().run_files(layout))
    earlier = marker.flag()
    marker.raise_flag(requested)
    flag = marker.flag()
    assert flag is not None
    holds = earlier is None and flag == requested
    return RunStop(flag, note if holds else None)


def end_unsuccessful_run(
    *,
    run_id: int,
    reasons: Mapping[str, str],
    flag: AbortFlag | None,
) -> None:
    """Record the end of a run whose nodes did not all succeed (``reasons``: each such node's
    first line): ``stopped`` when its abort flag was a stop, ``failed`` otherwise. A user's stop
    reads as one (who, when, how far the training had got: ``AbortFlag.stop_summary``), not as
    the nodes it stopped; any other end names the node that ended the run, and the others."""
    with default_catalog().session() as session:
        run = session.get(Run, run_id)
        if flag is not None and flag.by_user and run is not None:
            message = flag.stop_summary(progress_of(run, now=time.time()))
        else:
            message = run_message(reasons, culprit=flag.node if flag else None)
        state = RunState.FAILED
        if flag is not None and flag.stopped:
            state = RunState.PRUNED if flag.pruned else RunState.STOPPED
        end_run(session, run_id=run_id, state=state, reason=message)
