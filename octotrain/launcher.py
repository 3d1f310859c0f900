"""What a launcher is, whichever runs the nodes: the few things the run's stages and the
console's pages need from it beyond their own work, so that nothing asks which launcher is
configured (nor guesses it by looking for a file).

Two implementations: ``hooks/local/local_launcher.py`` (a process per node on the worker, files in
the run folder) and ``hooks/kubernetes/pod_launcher.py`` (a pod per node, files in the object
store); ``hooks/launchers.configured_launcher`` picks the configured one, and the DAG factory the
stages that go with it, each once.
"""

from __future__ import annotations

from typing import Protocol

from octotrain.admission import Demand, QueueState
from octotrain.catalog.models import ModelVersion, Run
from octotrain.planning import RunPlan
from octotrain.run_files import RunFiles
from octotrain.run_layout import RunLayout


class Launcher(Protocol):
    def rendezvous(self, plan: RunPlan) -> tuple[str, int]:
        """Where node 0 listens (``MASTER_ADDR``, ``MASTER_PORT``); raises ``InvalidInput``
        when the plan cannot run on this launcher (naming the field and why)."""

    def run_files(self, layout: RunLayout, *, live: bool = True) -> RunFiles:
        """Where the run's files are, for its stages to write and read and for the pages to
        read (``live``: the run has not ended yet)."""

    def queue_state(self, run: Run) -> QueueState | None:
        """The run's place in what admits its nodes (this machine's rule, or Kueue)."""

    def concurrency_refusal(self, project: str, demand: Demand, runs: int) -> str | None:
        """Why ``runs`` runs of ``demand`` each could never hold their nodes at once within
        ``project``'s quota (a sweep's trials at once); None when they could."""

    def archive(self, plan: RunPlan, layout: RunLayout) -> ModelVersion:
        """The nodes' merged OUTPUT as the next version of the plan's repository, from where
        this launcher's nodes left it; raises ``ArchiveFailed`` (nothing archived) if not."""
