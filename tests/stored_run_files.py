"""A run's files read and written in a store by key, for tests that set up or look at what a
pod's containers or a stage leave there (``hooks.runs.run_files.StoreRunFiles``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hooks.runs.run_files import StoreRunFiles
from octotrain.run_files import read_json, read_text
from octotrain.run_layout import RunObjects
from octotrain.storage import ObjectStore


def run_files_of(store: ObjectStore, key: str) -> StoreRunFiles:
    """The files of the run that ``key`` (``runs/<task id>/<run key>/…``) belongs to."""
    return StoreRunFiles(store, RunObjects.from_prefix("/".join(key.split("/")[:3])))


def stored_text(store: ObjectStore, key: str) -> str | None:
    return read_text(run_files_of(store, key), key)


def stored_json(store: ObjectStore, key: str) -> Any:
    return read_json(run_files_of(store, key), key)


def store_text(store: ObjectStore, key: str, text: str) -> None:
    run_files_of(store, key).write(key, text.encode("utf-8"))


def made(path: Path) -> Path:
    """``path`` with its folder made: a file a test writes in a run folder by hand."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return path
