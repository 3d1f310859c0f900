"""A synchronous pod launch task's watcher of the run's abort flag (``hooks.runs.run_abort``): it
calls ``on_look`` at each look while the flag is down (a hang's notices), and ``on_flag`` once
when it goes up, after which it looks no more."""

from __future__ import annotations

import threading
from pathlib import Path

from hooks.runs.run_abort import AbortWatcher, RunAbortMarker
from hooks.runs.run_files import StoreRunFiles
from hooks.storage.local_store import LocalFolderStore
from octotrain.abort_flags import AbortFlag
from octotrain.run_layout import RunObjects

DEADLINE_SECONDS = 30


def test_the_watcher_looks_until_the_flag_goes_up_then_calls_on_flag_once(
    tmp_path: Path,
) -> None:
    store = LocalFolderStore(tmp_path / "objects")
    marker = RunAbortMarker(StoreRunFiles(store, RunObjects.from_prefix("runs/7/manual__x")))
    looks: list[int] = []
    looked_twice, flagged = threading.Event(), threading.Event()
    flags: list[AbortFlag] = []

    def look() -> None:
        looks.append(len(looks))
        if len(looks) >= 2:
            looked_twice.set()

    def on_flag(flag: AbortFlag) -> None:
        flags.append(flag)
        flagged.set()

    with AbortWatcher(marker, every=0.01, on_flag=on_flag, on_look=look):
        assert looked_twice.wait(DEADLINE_SECONDS)
        marker.raise_flag(AbortFlag.stopped_by("alice"))
        assert flagged.wait(DEADLINE_SECONDS)
        seen = len(looks)
    assert [flag.text() for flag in flags] == [AbortFlag.stopped_by("alice").text()]
    assert len(looks) == seen  # no look after the flag
