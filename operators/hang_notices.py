"""What a node's launch task says while its wrapper finds the training hung (``agent/
hang_watch.py``, ``octotrain.hang_detection``): a warning in the task's Airflow log, and the
run's note in the catalog, which the run view shows, withdrawn if the training advances again.

A note is no part of the training: a catalog that cannot be written is logged as a warning and
the node goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from hooks.catalog import default_catalog
from octotrain.hang_detection import HungNode
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
        hung = self.read()
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
