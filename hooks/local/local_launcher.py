"""The local launcher (the embedded default): a process per node on the Airflow worker that
runs its task instance (``operators/local/launch_local.py``), the run's files in its run folder on
that machine, the nodes meeting on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

from hooks.local import local_admission
from hooks.local.local_process import free_port
from hooks.runs.model_archive import (
    ArchiveFailed,
    NoModelWritten,
    archive_outputs,
    different_outputs,
)
from hooks.runs.run_files import folder_then_store
from hooks.storage.catalog import default_catalog
from hooks.storage.hashing_io import file_checksum
from hooks.storage.object_store import default_object_store
from octotrain.admission import Demand, QueueState
from octotrain.catalog.models import ModelVersion, Run
from octotrain.errors import FieldProblem, InvalidInput
from octotrain.metrics import final_values
from octotrain.planning import RunPlan
from octotrain.run_files import RunFiles
from octotrain.run_layout import RunLayout

LOCAL_MASTER_ADDR = "127.0.0.1"


class LocalLauncher:
    def rendezvous(self, plan: RunPlan) -> tuple[str, int]:
        """This machine and a port free now; a run that could never start all its nodes
        together here is refused (``hooks.local.local_admission``)."""
        why = local_admission.refusal(plan)
        if why is not None:
            raise InvalidInput([FieldProblem("node_count", why)])
        return LOCAL_MASTER_ADDR, free_port()

    def run_files(self, layout: RunLayout, *, live: bool = True) -> RunFiles:
        """The run folder on this machine, which the nodes' processes share, while the run is
        live; the store after, where ``collect_logs`` uploaded the folder."""
        return folder_then_store(layout, default_object_store(), live=live)

    def queue_state(self, run: Run) -> QueueState | None:
        """This machine's admission rule (``hooks.local.local_admission``)."""
        return local_admission.queue_state(run.id)

    def concurrency_refusal(self, project: str, demand: Demand, runs: int) -> str | None:
        """This machine's bounds and the project's quota (``hooks.local.local_admission``)."""
        return local_admission.concurrency_refusal(project, demand, runs)

    def archive(self, plan: RunPlan, layout: RunLayout) -> ModelVersion:
        """The nodes' OUTPUT folders are in the run folder."""
        files = merged_outputs(layout, plan.node_indices)
        if not files:
            raise NoModelWritten()
        metrics = final_values(layout.node_folders(plan.node_indices[0]).metrics)
        lineage = plan.lineage | {"metrics": metrics}
        return archive_outputs(default_catalog(), default_object_store(), plan, files, lineage)


def merged_outputs(layout: RunLayout, node_indices: list[str]) -> dict[str, Path]:
    """Every file of every node's OUTPUT by relative path; identical duplicates are merged,
    different content under one path is refused (``hooks.runs.model_archive.stored_outputs``
    says the same of pods' uploads)."""
    files: dict[str, Path] = {}
    for node_index in node_indices:
        output = layout.node_folders(node_index).output
        if not output.is_dir():
            continue
        for path in sorted(output.rglob("*")):
            if not path.is_file():
                continue
            relative = path.relative_to(output).as_posix()
            earlier = files.get(relative)
            if earlier is None:
                files[relative] = path
            elif file_checksum(earlier) != file_checksum(path):
                raise ArchiveFailed(different_outputs(relative, f"{earlier} and {path}"))
    return files
