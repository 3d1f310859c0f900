"""What the Octotrain image does inside a training pod (``octotrain node stage|sync``).

``stage`` (init container): lays out the node's work folder, copies the agent for the training
container, stages the inputs the run's stage plan names through the node cache (the same code
as the local launcher), restores the node's latest checkpoint into ``CHECKPOINT`` (this run's,
should the node be started again, else the one of the run it resumes), and uploads its init
log. ``sync`` (a native sidecar: an init
container with ``restartPolicy: Always``, which Kubernetes stops once the training container
has ended, however it ended, OOM kill included): uploads the node's logs, metrics and resource
samples every few seconds while the training runs, and what changed in ``CHECKPOINT`` at most
every ``checkpoint_sync_seconds``; when the training has ended (the wrapper wrote its exit
status, and waits for the upload) or the pod is being stopped (SIGTERM), it uploads the final
state, ``CHECKPOINT``, and ``OUTPUT`` with its manifest.
"""

from __future__ import annotations

import shutil
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

from hooks.inputs.node_cache import NodeCache
from hooks.inputs.staging import stage_inputs
from hooks.local.local_process import AGENT_DIR
from hooks.runs.checkpoint_sync import CheckpointSync, restore_checkpoint
from hooks.runs.run_files import StoreRunFiles
from hooks.runs.run_progress import StagingPhase, phase_sink, record_phase
from octotrain.contracts import METRICS_META_FILE, NodeFolders, NodeLogNames
from octotrain.exit_reports import ExitReport
from octotrain.hang_detection import HANG_REPORT_FILE
from octotrain.manifests import manifest_of
from octotrain.metrics_meta import meta_report
from octotrain.node_progress import PHASE_FILE, PROGRESS_SAMPLES_FILE, Phase
from octotrain.run_files import write_json
from octotrain.run_layout import RunObjects, node_cache_holder
from octotrain.stage_plans import StagePlan
from octotrain.storage import ObjectNotFound, ObjectStore

GIB = 1024**3


def _stamped(log: Path) -> Callable[[str], None]:
    def note(message: str) -> None:
        with log.open("a", encoding="utf-8") as handle:
            handle.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {message}\n")

    return note


def stage_pod_node(
    store: ObjectStore,
    *,
    plan_key: str,
    task_id: int,
    node_index: str,
    work: Path,
    cache_dir: Path,
    agent_dir: Path,
    cache_max_bytes: int,
) -> None:
    """The init container's work; raises (after noting why in the init log) on failure."""
    folders = NodeFolders.under(work)
    folders.create(with_model=False)  # MODEL is made by staging, when there are input models
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    names = NodeLogNames(task_id=task_id, node_index=node_index)
    prefix = plan_key.rsplit("/", 1)[0]
    files = StoreRunFiles(store, RunObjects.from_prefix(prefix))
    objects = files.objects
    for name in names.always():
        _go_on_from(store, objects.log(name), logs / name)
    note = _stamped(logs / names.init)
    try:
        agent_dir.mkdir(parents=True, exist_ok=True)
        for source in AGENT_DIR.glob("*.py"):
            shutil.copy2(source, agent_dir / source.name)
        note(f"preparing node {node_index} (agent copied to {agent_dir})")
        stage_plan = StagePlan.model_validate_json(files.read(plan_key) or b"")
        cache = NodeCache(cache_dir, max_bytes=cache_max_bytes)
        holder = node_cache_holder(prefix, node_index)
        staging = StagingPhase(phase_sink(files, node_index))
        stage_inputs(store, cache, folders, (stage_plan.data, stage_plan.models), note,
                     holder=holder, on_bytes=staging.bytes_done,
                     code=stage_plan.code)  # fmt: skip
        restored = restore_checkpoint(
            store,
            sources=stage_plan.checkpoint_runs,
            objects=objects,
            node_index=node_index,
            folder=folders.checkpoint,
        )
        note(restored.in_words() if restored else "no checkpoint to restore: CHECKPOINT is empty")
        note(f"data preparation finished for node {node_index}")
        staging.finished()
    except Exception as error:
        note(f"ERROR staging failed: {error}")
        raise
    finally:
        store.put_file(objects.log(names.init), logs / names.init)


def _go_on_from(store: ObjectStore, key: str, log: Path) -> None:
    """Start the pod's copy of a node's log from what the store has of it: a node started
    again for the run's restart (``octotrain.restarts``) goes on with its earlier starts' log
    lines (the training's wrapper and the sidecar append), which its sidecar's uploads would
    otherwise replace. Empty for a node's first start."""
    try:
        store.get_file(key, log)
    except ObjectNotFound:
        log.touch()


class NodeSync:
    """The sidecar: the node's files in the object store, a few seconds behind at most."""

    def __init__(
        self,
        store: ObjectStore,
        *,
        prefix: str,
        task_id: int,
        node_index: str,
        work: Path,
        run_id: str,
        checkpoint_every: float,
        cache: NodeCache | None = None,
    ) -> None:
        self.store, self.prefix, self.node_index, self.work = store, prefix, node_index, work
        self.files = StoreRunFiles(store, RunObjects.from_prefix(prefix))
        self.objects = self.files.objects
        self.cache = cache
        self.sent: dict[str, tuple[int, int]] = {}
        self.names = NodeLogNames(task_id=task_id, node_index=node_index)
        self.note = _stamped(work / "logs" / self.names.sidecar)
        self.checkpoints = CheckpointSync(
            store,
            objects=self.objects,
            run_id=run_id,
            node_index=node_index,
            folder=NodeFolders.under(work).checkpoint,
            every_seconds=checkpoint_every,
            note=self.note,
        )

    def _changed(self, path: Path, key: str) -> None:
        stat = path.stat()
        seen = (stat.st_size, stat.st_mtime_ns)
        if self.sent.get(key) != seen:
            self.store.put_file(key, path)
            self.sent[key] = seen

    def sync(self) -> None:
        """Upload what changed: log files, metrics, resource samples, and the checkpoint when
        its sync is due."""
        logs = self.work / "logs"
        for path in sorted(logs.glob("*")) if logs.is_dir() else []:
            if path.is_file():
                self._changed(path, self.objects.log(path.name))
        metrics = self.work / "metrics"
        for path in sorted(metrics.rglob("*")) if metrics.is_dir() else []:
            if path.is_file():
                relative = path.relative_to(metrics).as_posix()
                key = f"{self.objects.metrics(self.node_index)}/{relative}"
                before = self.sent.get(key)
                self._changed(path, key)
                if relative == METRICS_META_FILE and self.sent.get(key) != before:
                    for line in meta_report(metrics):  # once each time the file changes
                        self.note(line)
        resources = self.work / "resources.jsonl"
        if resources.is_file():
            self._changed(resources, self.objects.resources(self.node_index))
        for path, key in (
            (self.work / PHASE_FILE, self.objects.phase(self.node_index)),
            (self.work / PROGRESS_SAMPLES_FILE, self.objects.progress(self.node_index)),
        ):
            if path.is_file():
                self._changed(path, key)
        self._sync_hang_report()
        self.checkpoints.sync()

    def _sync_hang_report(self) -> None:
        """The wrapper's hang report while the training looks hung, emptied in the store (the
        store deletes folders, not objects) once it advances again: the launch task reads it
        there to say so."""
        path = self.work / HANG_REPORT_FILE
        key = self.objects.hang_report(self.node_index)
        try:
            self._changed(path, key)
        except FileNotFoundError:  # none, or removed since: the training advances
            if self.sent.pop(key, None) is not None:
                self.files.write(key, b"{}")

    def upload_output(self) -> int:
        """``OUTPUT`` and its manifest (what ``archive_model`` merges); returns the file count."""
        output = self.work / "output"
        files = sorted(p for p in output.rglob("*") if p.is_file()) if output.is_dir() else []
        base = self.objects.output(self.node_index)
        written = [
            self.store.put_file(f"{base}/{path.relative_to(output).as_posix()}", path)
            for path in files
        ]
        manifest = manifest_of(written, base) if written else {}
        write_json(self.files, self.objects.output_manifest(self.node_index), manifest)
        return len(files)

    def run(self, *, every: float, exit_file: Path, ready_file: Path, done_file: Path) -> int:
        """Sync until the training ends or the pod is stopped; then the final upload, and
        ``done_file`` for the training container's wrapper, which waits for it (as it waits
        for ``ready_file`` before it starts the training: from then on a stop is handled).
        As a native sidecar it then runs on until Kubernetes stops it (SIGTERM), once the
        training container has ended: a sidecar that exited on its own would be restarted."""
        stopping = threading.Event()
        signal.signal(signal.SIGTERM, lambda _signum, _frame: stopping.set())
        ready_file.write_text("ready\n")
        self.note(f"sidecar started: syncing {self.work} to {self.store.url} every {every:g}s")
        failures = 0
        while not exit_file.exists() and not stopping.wait(every):
            try:
                self.sync()
                failures = 0
            except Exception as error:  # the store may be briefly away: try again later
                failures += 1
                self.note(f"sync failed ({failures} in a row): {error}")
        self._final_upload(exit_file)
        # After the final sync: the wrapper writes no phase once it has written its exit file.
        record_phase(phase_sink(self.files, self.node_index), Phase.DONE)
        done_file.write_text("uploaded\n")
        self._release_inputs()
        stopping.wait()
        self.sync()
        return 0

    def _final_upload(self, exit_file: Path) -> None:
        report = _exit_report(exit_file)
        status = report.exit_status
        shown = "none: stopped" if status is None else status
        self.note(f"training ended (exit status {shown}); final upload")
        self._final_checkpoint()
        count = self.upload_output()
        self.note(f"uploaded OUTPUT: {count} files")
        write_json(self.files, self.objects.exit_report(self.node_index), report.document())
        self.sync()

    def _final_checkpoint(self) -> None:
        """Everything in ``CHECKPOINT`` now, before ``OUTPUT``: a node that was stopped or
        evicted has only its checkpoint to give, in what is left of its grace period."""
        try:
            self.checkpoints.sync(final=True)
        except Exception as error:  # OUTPUT and the exit report are still worth uploading
            self.note(f"final checkpoint sync failed: {error}")

    def _release_inputs(self) -> None:
        """The training has ended: its inputs in the machine's node cache may be evicted."""
        if self.cache is None:
            return
        try:
            self.cache.unpin(node_cache_holder(self.prefix, self.node_index))
        except OSError as error:  # kept: the pins go stale in time
            self.note(f"could not release the node cache's pins: {error}")


def _exit_report(exit_file: Path) -> ExitReport:
    """The wrapper's report of how the training ended (agent/run_training.py: its exit status,
    why it could not start, a kill after the grace period); no status when there is none (the
    pod was stopped before the training ended)."""
    try:
        text = exit_file.read_text()
    except FileNotFoundError:
        text = ""
    report = ExitReport.parse(text)
    return report if report.document() else ExitReport(exit_status=None)
