"""The ``CHECKPOINT`` contract in code: which files of a node's checkpoint folder are synced,
where each synced version lives in the object store, and the manifest that says which versions
make up the node's latest checkpoint.

Objects of a checkpoint never change: every synced version of a file gets its own key (its
size and write time are part of it), and the manifest, one object written after the files it
names, is what "the latest checkpoint" means. A reader of the manifest therefore always finds
complete files, and a file that was being written while it was uploaded (its size or write time
moved) is simply not named until a later sync sees it settled. Files whose name (or folder)
starts with ``.`` or ends with ``.tmp``/``.partial``/``~`` are a training's work in progress,
never synced: write a checkpoint under such a name and rename it into place (as ``torch.save``
users do with ``os.replace``), so that its final name only ever holds a whole file.
"""

from __future__ import annotations

import datetime
import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

from octotrain.contracts import rank_of

WORK_IN_PROGRESS_SUFFIXES = (".tmp", ".partial", "~")
MANIFEST_FORMAT = 1


def is_synced(relative: str) -> bool:
    """Whether a file at ``relative`` (``/``-separated, under ``CHECKPOINT``) is synced."""
    parts = relative.split("/")
    if any(part.startswith(".") for part in parts):
        return False
    return not parts[-1].endswith(WORK_IN_PROGRESS_SUFFIXES)


@dataclass(frozen=True)
class FileVersion:
    """One version of one checkpoint file: where its bytes are and what they were."""

    key: str
    size: int
    mtime_ns: int
    checksum: str

    def same_as(self, size: int, mtime_ns: int) -> bool:
        return self.size == size and self.mtime_ns == mtime_ns


def version_key(checkpoints_prefix: str, relative: str, *, size: int, mtime_ns: int) -> str:
    """The key of one version of a file: a folder per version (so that dropping a version is
    deleting its folder), named by the file's path, size and write time."""
    path_digest = hashlib.sha256(relative.encode()).hexdigest()[:8]
    return f"{checkpoints_prefix}/{mtime_ns:x}-{size:x}-{path_digest}/{relative}"


@dataclass(frozen=True)
class CheckpointManifest:
    """A node's latest checkpoint: the version of each file, and when and by which run it was
    written. ``files`` may name objects of an earlier run (what a resumed run restored and has
    not changed since): they are never deleted by this run."""

    run_id: str
    node_index: str
    written: str
    files: dict[str, FileVersion] = field(default_factory=dict)
    restored_from: dict[str, str] | None = None

    @property
    def total_bytes(self) -> int:
        return sum(version.size for version in self.files.values())

    def to_json(self) -> dict[str, Any]:
        document = asdict(self)
        document["format"] = MANIFEST_FORMAT
        return document

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> CheckpointManifest:
        if document.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"unknown checkpoint manifest format {document.get('format')!r}")
        return cls(
            run_id=str(document["run_id"]),
            node_index=str(document["node_index"]),
            written=str(document["written"]),
            files={
                relative: FileVersion(**version) for relative, version in document["files"].items()
            },
            restored_from=document.get("restored_from"),
        )


def utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def same_rank_nodes(node_index: str) -> list[str]:
    """The node indices whose checkpoint node ``node_index`` restores, in order: its own, then
    the other name of its rank (a run resumed with another node count: ``single-0`` and
    ``distributed-0`` are both rank 0)."""
    rank = rank_of(node_index)
    other = f"distributed-{rank}" if node_index.startswith("single-") else f"single-{rank}"
    return [node_index] if rank > 0 else [node_index, other]
