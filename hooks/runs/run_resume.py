"""Whether a run can be resumed, asked before a resume is triggered (the API, the command
line): the catalog's rules (``octotrain.resume``), and a checkpoint in the object store, since
a resume without one would only start the training again from scratch."""

from __future__ import annotations

from hooks.runs.checkpoint_sync import left_checkpoint
from octotrain.catalog.models import Run
from octotrain.catalog.views import RunView
from octotrain.planning import recorded_plan
from octotrain.resume import why_not_resumable
from octotrain.run_layout import RunObjects
from octotrain.storage import ObjectStore


def with_resumable(store: ObjectStore, run: Run) -> RunView:
    """``run`` as the API shows it, saying whether it can be resumed now (the store is only
    asked for a failed or stopped run that started)."""
    return RunView.of(run).model_copy(update={"resumable": why_not_resumed(store, run) is None})


def why_not_resumed(store: ObjectStore, run: Run) -> str | None:
    """Why ``run`` cannot be resumed now, in words; None when it can."""
    refused = why_not_resumable(run)
    if refused is not None:
        return refused
    plan = recorded_plan(run)
    if plan is None:  # refused above: a run validate never planned is not resumable
        raise AssertionError(f"run {run.id} has no plan")
    if not left_checkpoint(store, RunObjects(run.task_id, plan.run_key), plan.node_indices):
        return f"run {run.id} left no checkpoint: none of its nodes wrote to CHECKPOINT"
    return None
