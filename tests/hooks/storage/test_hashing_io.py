"""Checksummed copies and links: what is copied and what its checksum says are the file's whole
content, for every size the copy treats apart (empty, hashed once copied, hashed while copied);
only read-only files are linked, and only where the file system links."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from blake3 import blake3

from hooks.storage import hashing_io
from hooks.storage.hashing_io import copy_hashing, file_checksum, link_hashing

SIZES = [
    0,
    1,
    107 * 1024,
    hashing_io.SMALL_FILE_BYTES,
    hashing_io.SMALL_FILE_BYTES + 1,  # hashed in place while another thread copies
]


@pytest.mark.parametrize("size", SIZES)
def test_a_copy_holds_the_whole_file_and_its_checksum(tmp_path: Path, size: int) -> None:
    content = os.urandom(size)
    source, copy = tmp_path / "source", tmp_path / "copy"
    source.write_bytes(content)
    copied: list[int] = []

    checksum, copied_size, modified = copy_hashing(source, copy, copied.append)

    assert copy.read_bytes() == content
    assert checksum == blake3(content).hexdigest() == file_checksum(copy)
    assert (copied_size, sum(copied), modified) == (size, size, source.stat().st_mtime)


@pytest.mark.parametrize("refused", [["copy_file_range"], ["copy_file_range", "sendfile"]])
@pytest.mark.parametrize("size", [4096, hashing_io.SMALL_FILE_BYTES + 1])
def test_where_the_kernel_refuses_a_copy_the_next_way_copies_all_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int, refused: list[str]
) -> None:
    """Across file systems ``copy_file_range`` fails with EXDEV; some refuse ``sendfile``."""
    content = os.urandom(size)
    source, copy = tmp_path / "source", tmp_path / "copy"
    source.write_bytes(content)

    def refuse(*_arguments: object) -> None:
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    for name in refused:
        monkeypatch.setattr(hashing_io.os, name, refuse)

    checksum, _size, _modified = copy_hashing(source, copy)

    assert (copy.read_bytes(), checksum) == (content, blake3(content).hexdigest())


@pytest.mark.parametrize("size", [4096, hashing_io.SMALL_FILE_BYTES + 1])
def test_a_source_that_ends_before_its_size_is_an_error_not_a_short_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    source = tmp_path / "source"
    source.write_bytes(os.urandom(size))
    monkeypatch.setattr(hashing_io, "_copy_range", lambda *_arguments: 0)

    with pytest.raises(OSError, match=f"ended after 0 of {size} bytes"):
        copy_hashing(source, tmp_path / "copy")


@pytest.mark.parametrize("size", [0, 4096, hashing_io.PARALLEL_HASH_BYTES])
def test_a_read_only_file_is_linked_and_its_checksum_read_from_the_link(
    tmp_path: Path, size: int
) -> None:
    content = os.urandom(size)
    source, link = tmp_path / "source", tmp_path / "link"
    source.write_bytes(content)
    source.chmod(0o444)
    link.write_bytes(b"an older file of that name")
    linked: list[int] = []

    found = link_hashing(source, link, linked.append)

    assert found == (blake3(content).hexdigest(), size, source.stat().st_mtime)
    assert link.stat().st_ino == source.stat().st_ino
    assert sum(linked) == size


def test_a_writable_file_is_not_linked_so_its_mode_and_content_stay_its_own(
    tmp_path: Path,
) -> None:
    source = tmp_path / "source"
    source.write_bytes(b"data")

    assert link_hashing(source, tmp_path / "link") is None
    assert not (tmp_path / "link").exists()


@pytest.mark.parametrize("error", [errno.EXDEV, errno.EPERM, errno.EMLINK])
def test_where_no_link_can_be_made_the_caller_is_told_to_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: int
) -> None:
    source = tmp_path / "source"
    source.write_bytes(b"data")
    source.chmod(0o444)

    def refuse(*_arguments: object) -> None:
        raise OSError(error, os.strerror(error))

    monkeypatch.setattr(hashing_io.os, "link", refuse)

    assert link_hashing(source, tmp_path / "link") is None


def test_a_missing_source_is_an_error_not_a_copy(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        link_hashing(tmp_path / "missing", tmp_path / "link")
