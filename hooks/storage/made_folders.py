"""Folders a download makes for its file, and their removal when it fails: a failed download
leaves nothing behind, not even the folder it made."""

from __future__ import annotations

from pathlib import Path


def missing_folders(folder: Path) -> list[Path]:
    """``folder`` and those of its parents that do not exist, innermost first."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    return missing


def remove_empty(folders: list[Path]) -> None:
    """Remove ``folders`` (innermost first) while they are empty: another download may have
    put a file in one since."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return
