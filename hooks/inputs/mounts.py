"""Resource mounts on the machine that runs a node (the local launcher): ``MOUNTS/<name>``
shows a dataset version's files where they already are, read-only, without a download.

That needs the object store's files visible as a file system on the node: the local folder
store is; a bucket is when it is mounted there (s3fs, mountpoint-s3, an NFS export of the
store) and ``OCTOTRAIN_MOUNTS_ROOT`` says where. On Kubernetes the same is a read-only volume
described by the resource spec (``octotrain/mount_volumes.py``, ``config/mount_volumes.toml``).
"""

from __future__ import annotations

from pathlib import Path

from octotrain.storage import ObjectStore


class MountUnavailable(RuntimeError):
    """The dataset cannot be mounted on this node; the message says what is missing."""


def expose_mount(
    store: ObjectStore, object_prefix: str, target: Path, mounts_root: Path | None
) -> Path:
    """Make ``target`` a read-only view (a symbolic link) of ``object_prefix``'s files."""
    source = mounts_root / object_prefix if mounts_root else store.local_path(object_prefix)
    if source is None:
        raise MountUnavailable(
            f"resource mounts need the object store {store.url} visible as files on the node: "
            "mount the bucket there (s3fs, mountpoint-s3, NFS) and set OCTOTRAIN_MOUNTS_ROOT"
        )
    if not source.is_dir():
        raise MountUnavailable(f"{source} (the files of {object_prefix}) is not on this node")
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.exists():
        target.unlink()
    target.symlink_to(source, target_is_directory=True)
    return target
