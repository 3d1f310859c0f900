"""What a launcher is, whichever runs the nodes: the few things the run's stages need from it
beyond their own work, so that no stage asks which launcher is configured.

Two implementations: ``hooks/local_launcher.py`` (a process per node on the worker, files in
the run folder) and ``hooks/pod_launcher.py`` (a pod per node, files in the object store);
``hooks/launchers.configured_launcher`` picks the configured one, and the DAG factory the
stages that go with it, each once.
"""

from __future__ import annotations

from typing import Protocol

from octotrain.abort_flags import AbortFlag
from octotrain.catalog.models import ModelVersion
from octotrain.planning import RunPlan
from octotrain.run_layout import RunLayout


class AbortMarker(Protocol):
    """Where a run's abort flag is raised (a stop, a node's failure) for every node to see."""

    def raise_flag(self, flag: AbortFlag) -> None:
        """Raise ``flag``; the first flag stays."""

    def flag(self) -> AbortFlag | None:
        """The flag, or None while the run goes on."""


class Launcher(Protocol):
    def rendezvous(self, plan: RunPlan) -> tuple[str, int]:
        """Where node 0 listens (``MASTER_ADDR``, ``MASTER_PORT``); raises ``InvalidInput``
        when the plan cannot run on this launcher (naming the field and why)."""

    def abort_marker(self, layout: RunLayout) -> AbortMarker:
        """The run's abort flag where this launcher's nodes look for it."""

    def archive(self, plan: RunPlan, layout: RunLayout) -> ModelVersion:
        """The nodes' merged OUTPUT as the next version of the plan's repository, from where
        this launcher's nodes left it; raises ``ArchiveFailed`` (nothing archived) if not."""
