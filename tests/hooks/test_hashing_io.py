"""Checksummed copies: what is copied and what its checksum says are the file's whole content,
for every size the copy treats apart (empty, hashed once copied, hashed while copied)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from blake3 import blake3

from hooks import hashing_io
from hooks.hashing_io import copy_hashing, file_checksum

SIZES = [
    0,
    1,
    107 * 1024,
    hashing_io.HASH_BUFFER_BYTES + 1,  # hashed in two reads of the thread's buffer
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


@pytest.mark.parametrize("size", [4096, hashing_io.SMALL_FILE_BYTES + 1])
def test_a_source_that_ends_before_its_size_is_an_error_not_a_short_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    source = tmp_path / "source"
    source.write_bytes(os.urandom(size))
    monkeypatch.setattr(hashing_io, "_copy_range", lambda *_arguments: 0)

    with pytest.raises(OSError, match=f"ended after 0 of {size} bytes"):
        copy_hashing(source, tmp_path / "copy")
