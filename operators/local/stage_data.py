"""``stage_data``: bring each node its inputs before it starts.

Data inputs go to ``DATASET/<name>`` and input models to ``MODEL`` (one version: its files;
several: one folder each), through the node cache, verified against their manifests; resource
mounts appear under ``MOUNTS/<name>`` without a download; the node's latest checkpoint (of the
run it resumes) goes to ``CHECKPOINT``. Every node gets its own
``train-{id}-{index}-init.log`` saying what was staged, how much and how fast, or why it could
not be. The three always-present log files of every node are created here, so the log contract
holds even when staging fails; and since no node then starts, each gets its supplemental log
here (why its staging failed, or which node's did) and the run's abort flag goes up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowFailException

from hooks.inputs.mounts import MountUnavailable, expose_mount
from hooks.inputs.node_cache import DiskTooSmall, NodeCache
from hooks.inputs.staging import BytesDone, stage_inputs
from hooks.local import local_admission
from hooks.runs.checkpoint_sync import restore_checkpoint
from hooks.runs.run_abort import RunAbortMarker
from hooks.runs.run_progress import StagingPhase, phase_sink
from hooks.storage.catalog import default_catalog
from hooks.storage.object_store import default_object_store
from octotrain.abort_flags import AbortFlag
from octotrain.input_sources import StageSource, current_sources
from octotrain.planning import RunPlan
from octotrain.run_files import RunFiles
from octotrain.run_layout import RunLayout
from octotrain.settings import get_settings
from octotrain.storage import ObjectStore, ObjectStoreError
from octotrain.supplemental_log import NodeEnding
from operators.local.node_endings import record_ending
from operators.training_stage import TrainingStageOperator

GIB = 1024**3
STAGING_ERRORS = (ObjectStoreError, DiskTooSmall, MountUnavailable)


class StageDataOperator(TrainingStageOperator):
    ui_color = "#eef7ea"

    def execute(self, context: Context) -> None:
        plan = self.run_plan(context)
        layout, files = self.layout(plan), self.run_files(plan)
        layout.logs_dir.mkdir(parents=True, exist_ok=True)
        for node_index in plan.node_indices:
            for name in layout.log_names(node_index).always():
                layout.log_path(name).touch()
        with default_catalog().session() as session:
            data, gone_data = current_sources(session, plan.data_inputs)
            models, gone_models = current_sources(session, plan.input_models)
            mounts, gone_mounts = current_sources(session, plan.mounts)
            code, gone_code = current_sources(session, [plan.code] if plan.code else [])
        gone = gone_data + gone_models + gone_mounts + gone_code
        settings = get_settings()
        store = default_object_store()
        cache = NodeCache(settings.node_cache_dir, max_bytes=int(settings.node_cache_max_gb * GIB))
        mounts_root = Path(settings.mounts_root) if settings.mounts_root else None
        failures: dict[str, str] = {}
        for node_index in plan.node_indices:
            with init_log(layout, node_index) as note:
                note(f"preparing node {node_index} of task {plan.task_id} run {plan.run_id}")
                for problem in gone:
                    note(f"ERROR {problem}")
                if gone:
                    failures[node_index] = "; ".join(gone)
                    continue
                staging = StagingPhase(phase_sink(files, node_index))
                try:
                    stage_one_node(
                        store, cache, plan, layout, node_index, (data, models, mounts),
                        mounts_root, note, on_bytes=staging.bytes_done,
                        code=code[0] if code else None,
                    )  # fmt: skip
                    staging.finished()
                except STAGING_ERRORS as error:
                    note(f"ERROR staging failed: {error}")
                    failures[node_index] = str(error)
        if failures:
            _record_staging_failures(files, plan.node_indices, failures)
            raise AirflowFailException(
                "staging failed: " + "; ".join(f"{node}: {why}" for node, why in failures.items())
            )
        local_admission.request(plan)  # all nodes at once, once they have their inputs


def _record_staging_failures(
    files: RunFiles, node_indices: list[str], failures: dict[str, str]
) -> None:
    """No node starts: each says why in its supplemental log, the first failure in the run's
    abort flag (so that the run's message leads with it)."""
    first = next(iter(failures))
    why = f"did not start: staging failed because {failures[first]}"
    flag = AbortFlag.node_failed(first, why)
    RunAbortMarker(files).raise_flag(flag)
    for node_index in node_indices:
        if node_index in failures:
            ending = NodeEnding(node_index, staging_error=failures[node_index])
        else:
            reason = flag.why_stopped(node_index, started=False)
            ending = NodeEnding(node_index, stop_reason=reason)
        record_ending(files, ending)


def stage_one_node(
    store: ObjectStore,
    cache: NodeCache,
    plan: RunPlan,
    layout: RunLayout,
    node_index: str,
    sources: tuple[list[StageSource], list[StageSource], list[StageSource]],
    mounts_root: Path | None,
    note: Callable[[str], None],
    *,
    on_bytes: BytesDone | None = None,
    code: StageSource | None = None,
) -> None:
    """Stage every input of one node (the algorithm's ``code`` too), expose its mounts and
    restore its checkpoint; ``on_bytes`` hears how much of its download is done."""
    data, models, mounts = sources
    folders = layout.node_folders(node_index)
    folders.create(with_model=bool(models))
    holder = layout.cache_holder(node_index)
    stage_inputs(store, cache, folders, (data, models), note, holder=holder, on_bytes=on_bytes,
                 code=code)  # fmt: skip
    for source in mounts:
        path = expose_mount(store, source.object_prefix, folders.mounts / source.name, mounts_root)
        note(f"mounted {source.name} read-only at {path} (no download)")
    restored = restore_checkpoint(
        store,
        sources=plan.checkpoint_sources,
        objects=plan.objects,
        node_index=node_index,
        folder=folders.checkpoint,
    )
    note(restored.in_words() if restored else "no checkpoint to restore: CHECKPOINT is empty")
    note(f"data preparation finished for node {node_index}")


@contextmanager
def init_log(layout: RunLayout, node_index: str) -> Iterator[Callable[[str], None]]:
    path = layout.log_path(layout.log_names(node_index).init)
    with path.open("a", encoding="utf-8") as log:

        def note(message: str) -> None:
            log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {message}\n")
            log.flush()

        yield note
