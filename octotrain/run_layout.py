"""Where one run's files are: ``RunObjects`` spells every file's key, once; a run folder on the
machine that runs the nodes keeps the same keys as paths below it (``RunLayout.path``).

In the object store, and below the run folder (``<runs_dir>/<task id>/<run key>/``)::

    runs/<task id>/<run key>/
        stage.json              the stage plan the pods' init containers read (Kubernetes)
        logs/<file>             the product's log files of every node
        metrics/<node index>/   each node's METRICS
        chart-index/<node>/<chart>.index
                                each chart's index (octotrain/chart_series_index.py)
        resources/<node>.jsonl  each node's resource samples
        output/<node index>/    each node's OUTPUT, as its pod's sidecar uploaded it
        outputs/<node>.json     that upload's manifest
        exits/<node>.json       how the node's training ended (its wrapper's report)
        exits/<node>.hang.json  while the node's training looks hung, its wrapper's report
                                (octotrain/hang_detection.py)
        outcomes/<node>.json    how the node ended, as its launch recorded it (local launcher)
        phases/<node>.json      the node's phase (octotrain/node_progress.py)
        progress/<node>.jsonl   its training's progress samples
        checkpoints/<node>/<version>/<file>
                                every synced version of each file of the node's CHECKPOINT
                                (octotrain/checkpoints.py)
        checkpoints/<node>.json the node's latest checkpoint: which version of each file
        stops/<node>.json       why the node was stopped
        restarts/<n>.json       the run's restart number n, as the node that asked for it asked
        restarts/notes/<node>.json
                                how each earlier start of the node ended
        ABORT.json              the run's abort flag

The run folder has one more: ``nodes/<node index>/``, the node's working folders (``MODEL``,
``DATASET``, ``MOUNTS``, ``OUTPUT``, ``CHECKPOINT``, ``CODE``), which are never uploaded as
they are (``OUTPUT`` becomes a model version, ``CHECKPOINT`` is synced by versions).

Model versions are under ``models/<project>/<repository>/``: ``runs/<run key>/`` archived by
a run, ``<n>/`` imported.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from octotrain.contracts import NodeFolders, NodeLogNames


@dataclass(frozen=True)
class RunObjects:
    """Where one run's files are in the object store."""

    task_id: int
    run_key: str

    @classmethod
    def from_prefix(cls, prefix: str) -> RunObjects:
        """The run whose files are under ``prefix`` (what a pod's containers are told)."""
        root, task_id, run_key = prefix.split("/")
        if root != "runs" or not task_id.isdigit() or not run_key:
            raise ValueError(f"{prefix!r} is not a run's prefix, runs/<task id>/<run key>")
        return cls(int(task_id), run_key)

    @property
    def prefix(self) -> str:
        """Everything of the run is under it, so a run's files are listed, and removed, by it."""
        return f"runs/{self.task_id}/{self.run_key}"

    @property
    def stage_plan(self) -> str:
        """The stage plan the pods' init containers read (Kubernetes): what each node stages."""
        return f"{self.prefix}/stage.json"

    @property
    def logs(self) -> str:
        """The product's log files of every node, where the log pages read them once the run's
        folder is gone (and a pod's sidecar syncs them while it runs)."""
        return f"{self.prefix}/logs"

    def log(self, name: str) -> str:
        """One log file of one node (``NodeLogNames``)."""
        return f"{self.logs}/{name}"

    def metrics(self, node_index: str) -> str:
        """The node's ``METRICS``, as the Metrics page reads it."""
        return f"{self.prefix}/metrics/{node_index}"

    def resources(self, node_index: str) -> str:
        """The node's resource samples (CPU, memory, GPU), for the run's resources page."""
        return f"{self.prefix}/resources/{node_index}.jsonl"

    def output(self, node_index: str) -> str:
        """The node's ``OUTPUT`` as its pod's sidecar uploaded it (Kubernetes), where the
        archive copies the model version from."""
        return f"{self.prefix}/output/{node_index}"

    def output_manifest(self, node_index: str) -> str:
        """That upload's manifest (each file's size and checksum): what the archive merges,
        so only files uploaded whole are archived."""
        return f"{self.prefix}/outputs/{node_index}.json"

    def exit_report(self, node_index: str) -> str:
        """How the node's training ended, its wrapper's report (exit status, time limit, hang)."""
        return f"{self.prefix}/exits/{node_index}.json"

    def hang_report(self, node_index: str) -> str:
        """While the node's training looks hung, its wrapper's report, emptied when it
        advances again (``octotrain.hang_detection``)."""
        return f"{self.prefix}/exits/{node_index}.hang.json"

    def phase(self, node_index: str) -> str:
        """The node's phase (waiting, staging, training, uploading, done), for the run's page
        (``octotrain.node_progress``)."""
        return f"{self.prefix}/phases/{node_index}.json"

    def progress(self, node_index: str) -> str:
        """Its training's progress samples, from which its estimate is made."""
        return f"{self.prefix}/progress/{node_index}.jsonl"

    def checkpoints(self, node_index: str) -> str:
        """The synced versions of node ``node_index``'s checkpoint files."""
        return f"{self.prefix}/checkpoints/{node_index}"

    def checkpoint_manifest(self, node_index: str) -> str:
        """The node's latest checkpoint (``octotrain.checkpoints.CheckpointManifest``)."""
        return f"{self.prefix}/checkpoints/{node_index}.json"

    def chart_index(self, node_index: str, chart_name: str) -> str:
        """The index of a node's chart (``octotrain.chart_series_index``): beside the run's
        metrics, not among them (a sidecar's sync or a download of the metrics never meets
        it)."""
        return f"{self.prefix}/chart-index/{node_index}/{chart_name}.index"

    def outcome(self, node_index: str) -> str:
        """How the node ended, as its launch (or ``stage_data``, when no node could start)
        recorded it (local launcher): ``collect_logs`` reads it after the node's task process
        is gone."""
        return f"{self.prefix}/outcomes/{node_index}.json"

    @property
    def restarts(self) -> str:
        """The run's restarts (``octotrain.restarts``), one file each."""
        return f"{self.prefix}/restarts"

    def restart(self, attempt: int) -> str:
        """Restart number ``attempt``: the first request of the number stands."""
        return f"{self.restarts}/{attempt}.json"

    def restart_notes(self, node_index: str) -> str:
        """How each earlier start of the node ended, for its supplemental log."""
        return f"{self.restarts}/notes/{node_index}.json"

    def stop_record(self, node_index: str) -> str:
        """Why the node was stopped (the first line of its supplemental log), kept apart: a
        node that ended by itself before the abort flag went up was not stopped."""
        return f"{self.prefix}/stops/{node_index}.json"

    @property
    def abort_flag(self) -> str:
        """The run's abort flag, raised by a stop or a node's failure: every node
        watches it, since a distributed run cannot go on without one of its members."""
        return f"{self.prefix}/ABORT.json"


@dataclass(frozen=True)
class RunLayout:
    """A run's folder on the machine that runs its nodes: every ``RunObjects`` key of the run
    is the same path below it (``path``), so the folder is uploaded to the run's prefix as it
    is, and the nodes' working folders beside them."""

    runs_dir: Path
    task_id: int
    run_key: str

    @property
    def run_dir(self) -> Path:
        """The run folder: everything of the run on the machine that runs its nodes."""
        return self.runs_dir / str(self.task_id) / self.run_key

    @property
    def objects(self) -> RunObjects:
        return RunObjects(self.task_id, self.run_key)

    def path(self, key: str) -> Path:
        """Where the run's file ``key`` is in the run folder: the one mapping of keys to paths."""
        relative = key.removeprefix(f"{self.objects.prefix}/")
        if relative == key or not relative:
            raise ValueError(f"{key!r} is not a file of run {self.objects.prefix}")
        return self.run_dir / relative

    @property
    def logs_dir(self) -> Path:
        """The product's log files of every node, written while the run runs."""
        return self.path(self.objects.logs)

    @property
    def nodes_dir(self) -> Path:
        """The nodes' working folders: never uploaded as they are."""
        return self.run_dir / "nodes"

    def node_folders(self, node_index: str) -> NodeFolders:
        """The node's contract folders (``MODEL``, ``DATASET`` …), one set per node so that
        nodes on one machine never share an ``OUTPUT``; its ``METRICS`` at its key."""
        folders = NodeFolders.under(self.nodes_dir / node_index)
        return replace(folders, metrics=self.path(self.objects.metrics(node_index)))

    def create_node_folders(self, node_index: str, *, with_model: bool) -> NodeFolders:
        """Make the node's contract folders and the folders of the files its wrapper writes
        (its resource samples, exit report, phase and progress), which are the run's keys."""
        folders = self.node_folders(node_index)
        folders.create(with_model=with_model)
        for path in (self.resources_path(node_index), self.exit_path(node_index),
                     self.phase_path(node_index), self.progress_path(node_index)):  # fmt: skip
            path.parent.mkdir(parents=True, exist_ok=True)
        return folders

    def resources_path(self, node_index: str) -> Path:
        """The node's resource samples (agent/resource_monitor.py)."""
        return self.path(self.objects.resources(node_index))

    def exit_path(self, node_index: str) -> Path:
        """How the node's training ended, as its wrapper reported it (agent/run_training.py)."""
        return self.path(self.objects.exit_report(node_index))

    def phase_path(self, node_index: str) -> Path:
        """The node's phase (``octotrain.node_progress``)."""
        return self.path(self.objects.phase(node_index))

    def progress_path(self, node_index: str) -> Path:
        """Its training's progress samples, as its wrapper took them."""
        return self.path(self.objects.progress(node_index))

    def log_names(self, node_index: str) -> NodeLogNames:
        return NodeLogNames(task_id=self.task_id, node_index=node_index)

    def log_path(self, name: str) -> Path:
        """One log file of one node (``NodeLogNames``)."""
        return self.path(self.objects.log(name))

    def cache_holder(self, node_index: str) -> str:
        """Who pins node-cache entries while the run uses them (``node_cache_holder``)."""
        return node_cache_holder(self.objects.prefix, node_index)


def node_cache_holder(run_prefix: str, node_index: str) -> str:
    """Who pins a node's inputs in its machine's node cache while it trains, named from the
    run's object-store prefix, which a pod's containers know too: with ``""``, the start of
    every node's of the run (released together when the run's logs are collected)."""
    return f"{run_prefix}-{node_index}".replace("/", "-")


def model_import_prefix(project: str, repository: str, version: int) -> str:
    """Where an imported model version's files are (its number is taken before the upload)."""
    return f"models/{project}/{repository}/{version}"


def model_run_prefix(project: str, repository: str, task_id: int, run_key: str) -> str:
    """Where a run of task ``task_id`` archives its model; the version's row points here once
    it is complete (a version exists only as its row, so a half-uploaded prefix is never one).
    The task is part of it: runs of two tasks archiving into one repository can have one
    Airflow run id (the scheduled runs of one cron schedule, one request id), and the archive
    takes a version already at its prefix for its own (a retry's)."""
    return f"models/{project}/{repository}/runs/{task_id}-{run_key}"
