"""What a node's launch task says while its wrapper finds the training hung (``agent/
hang_watch.py``, ``octotrain.hang_detection``): a warning in the task's Airflow log, and the
run's note in the catalog, which the run view shows, withdrawn if the training advances again.
The local launcher reads the wrapper's hang report in the node's folder; for a pod it is in the
object store, where its sidecar keeps it, read by the launch task's trigger (or, synchronous,
its abort watcher) at each look at the run's abort flag.

A note is no part of the training: a catalog or a store that cannot be reached is logged as a
warning or looked at again next time, and the node goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from hooks.kubernetes.pod_launcher import pod_run_files
from hooks.storage.catalog import default_catalog
from octotrain.hang_detection import HungNode
from octotrain.planning import RunPlan
from octotrain.run_files import read_json
from octotrain.run_layout import RunObjects
from octotrain.run_lifecycle import note_active_run


class HangNotices:
    """Called at each look of the launch task at its running node, with ``read`` the node's
    hang report now (None while it advances); says each change once."""

    def __init__(
        self,
        *,
        node_index: str,
        catalog_run_id: int,
        read: Callable[[], HungNode | None],
        log: logging.Logger,
    ) -> None:
        self.node_index, self.catalog_run_id = node_index, catalog_run_id
        self.read, self.log = read, log
        self.note: str | None = None  # the note shown while the node looks hung

    def __call__(self) -> None:
        try:
            hung = self.read()
        except Exception as error:  # the store may be briefly away: looked at next time
            self.log.warning("could not read node %s's hang report: %s", self.node_index, error)
            return
        if hung is not None and self.note is None:
            self.note = f"node {self.node_index} looks hung: {hung.in_words()}"
            self.log.warning("%s", self.note)
            self._show(self.note, replacing="")
        elif hung is None and self.note is not None:
            self.log.info("node %s advances again: no longer hung", self.node_index)
            self._show("", replacing=self.note)
            self.note = None

    def _show(self, note: str, *, replacing: str) -> None:
        if not self.catalog_run_id:
            return
        try:
            with default_catalog().session() as session:
                note_active_run(session, self.catalog_run_id, note=note, replacing=replacing)
        except Exception:
            self.log.warning("could not note node %s's hang in the catalog", self.node_index,
                             exc_info=True)  # fmt: skip


def pod_hang_notices(
    *, run_prefix: str, node_index: str, catalog_run_id: int, log: logging.Logger
) -> HangNotices:
    """The notices of a pod's node, from its hang report as its sidecar keeps it in the
    store."""
    files = pod_run_files(RunObjects.from_prefix(run_prefix))
    key = files.objects.hang_report(node_index)

    def read() -> HungNode | None:
        return HungNode.from_json(read_json(files, key))

    return HangNotices(node_index=node_index, catalog_run_id=catalog_run_id, read=read, log=log)


@dataclass(frozen=True)
class PodHangWatch:
    """What a pod's launch task keeps of its run's hang detection, for its trigger and its
    abort watcher, which have no plan of their own."""

    run_prefix: str
    catalog_run_id: int
    watched: bool

    @classmethod
    def of(cls, plan: RunPlan) -> PodHangWatch:
        return cls(plan.objects.prefix, plan.catalog_run_id, plan.hang_after_seconds is not None)

    def notices(self, *, node_index: str, log: logging.Logger) -> HangNotices | None:
        """The node's notices, or None when its run does not watch for hangs."""
        if not self.watched:
            return None
        return pod_hang_notices(
            run_prefix=self.run_prefix,
            node_index=node_index,
            catalog_run_id=self.catalog_run_id,
            log=log,
        )
