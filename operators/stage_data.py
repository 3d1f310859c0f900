"""``stage_data``: bring each node its data inputs and input models before it starts.

Every node gets its own copy (as every pod's init container does on its own disk), and its own
``train-{id}-{index}-init.log`` that says what was staged, how much and how fast. The three
always-present log files of every node are created here, so the log contract holds even when
staging fails.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowFailException

from hooks.object_store import default_object_store, download_prefix
from octotrain.planning import RunPlan, StagedInput
from octotrain.run_layout import RunLayout
from octotrain.storage import ObjectStore, ObjectStoreError
from operators.training_stage import TrainingStageOperator


class StageDataOperator(TrainingStageOperator):
    ui_color = "#eef7ea"

    def execute(self, context: Context) -> None:
        plan = self.run_plan(context)
        layout = self.layout(plan)
        store = default_object_store()
        layout.logs_dir.mkdir(parents=True, exist_ok=True)
        failures = []
        for node_index in plan.node_indices:
            names = layout.log_names(node_index)
            for name in names.always():
                layout.log_path(name).touch()
            try:
                stage_node(store, plan, layout, node_index, layout.log_path(names.init))
            except ObjectStoreError as error:
                failures.append(f"{node_index}: {error}")
        if failures:
            raise AirflowFailException("staging failed: " + "; ".join(failures))


def stage_node(
    store: ObjectStore, plan: RunPlan, layout: RunLayout, node_index: str, init_log: Path
) -> None:
    """Stage every input of one node, recording each step in its init log."""
    folders = layout.node_folders(node_index)
    folders.create()
    with init_log.open("a", encoding="utf-8") as log:

        def note(message: str) -> None:
            log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {message}\n")
            log.flush()

        note(f"preparing node {node_index} of task {plan.task_id} run {plan.run_id}")
        model_root = folders.model
        for item in plan.input_models:
            # One input version: its files are MODEL itself; several: one sub-folder each.
            target = model_root if len(plan.input_models) == 1 else model_root / item.name
            _stage_one(store, item, target, note)
        for item in plan.data_inputs:
            _stage_one(store, item, folders.dataset / item.name, note)
        note(f"data preparation finished for node {node_index}")


def _stage_one(
    store: ObjectStore, item: StagedInput, target: Path, note: Callable[[str], None]
) -> None:
    note(f"staging {item.kind} {item.name} from {item.object_prefix}/ into {target}")
    started = time.monotonic()
    try:
        objects = download_prefix(store, item.object_prefix, target)
    except ObjectStoreError as error:
        note(f"ERROR staging {item.name}: {error}")
        raise
    if not objects:
        message = f"{item.kind} {item.name} has no files at {item.object_prefix}/"
        note(f"ERROR {message}")
        raise ObjectStoreError(message)
    size = sum(info.size for info in objects)
    seconds = max(time.monotonic() - started, 1e-6)
    note(
        f"staged {item.name}: {len(objects)} files, {size} bytes in {seconds:.2f}s "
        f"({size / seconds / 1e6:.1f} MB/s)"
    )
