"""Checksummed copies: what is copied and what its checksum says are the file's whole content,
for every size the copy treats apart (empty, read in one call, copied by the kernel)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from blake3 import blake3

from hooks import hashing_io
from hooks.hashing_io import copy_hashing, file_checksum


@pytest.mark.parametrize(
    "size", [0, 1, 107 * 1024, hashing_io.BUFFER_BYTES, hashing_io.BUFFER_BYTES + 1]
)
def test_a_copy_holds_the_whole_file_and_its_checksum(tmp_path: Path, size: int) -> None:
    content = os.urandom(size)
    source, copy = tmp_path / "source", tmp_path / "copy"
    source.write_bytes(content)
    copied: list[int] = []

    checksum, copied_size, modified = copy_hashing(source, copy, copied.append)

    assert copy.read_bytes() == content
    assert checksum == blake3(content).hexdigest() == file_checksum(copy)
    assert (copied_size, sum(copied), modified) == (size, size, source.stat().st_mtime)


def test_a_file_that_grew_since_its_size_was_read_is_read_to_its_end(tmp_path: Path) -> None:
    content = os.urandom(3 * 1024)
    source = tmp_path / "source"
    source.write_bytes(content)
    reader = os.open(source, os.O_RDONLY)
    try:
        assert hashing_io._read_all(reader, 1024) == content
    finally:
        os.close(reader)
