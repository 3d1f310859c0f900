"""The abort flag of a run whose nodes run as pods: an object in the store (the pods' nodes
and the Airflow tasks that watch them share no file system), saying which node ended the run
and why. ``hooks.local_process.RunAbortMarker`` is its local-launcher twin."""

from __future__ import annotations

import json

from hooks.run_files import read_json, write_text
from octotrain.storage import ObjectStore


class StoreAbortMarker:
    def __init__(self, store: ObjectStore, run_prefix: str) -> None:
        self.store = store
        self.key = f"{run_prefix}/ABORT.json"

    def raise_flag(self, *, node_index: str, reason: str) -> None:
        """The first flag stays: it names the node that ended the run."""
        if self.reason() is None:
            write_text(self.store, self.key, json.dumps({"node": node_index, "reason": reason}))

    def flag(self) -> dict[str, str] | None:
        return read_json(self.store, self.key)

    def reason(self) -> str | None:
        """Why the run is being stopped, or None while it is not."""
        flag = self.flag()
        return None if flag is None else f"node {flag['node']} {flag['reason']}"
