"""Line numbers of a paged log: counted once, at marks, and on from the last mark as the file
grows; a file replaced by a shorter one is counted afresh."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from octotrain import log_lines
from octotrain.log_lines import LineIndex


@dataclass
class Counted:
    """A file in memory that says how many bytes were read of it."""

    data: bytes
    read_bytes: int = field(default=0)

    @property
    def size(self) -> int:
        return len(self.data)

    def read(self, start: int, end: int) -> bytes:
        self.read_bytes += end - start
        return self.data[start:end]


def test_a_line_s_number_is_counted_once_then_read_from_its_mark(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(log_lines, "MARK_BYTES", 1000)
    monkeypatch.setattr(log_lines, "BLOCK_BYTES", 100)
    lines = [b"line %05d\n" % n for n in range(1, 2001)]  # 11 bytes each
    source = Counted(b"".join(lines))
    index = LineIndex()
    offset = 11 * 1500  # the start of line 1501
    assert index.line_at(source, offset) == 1501
    assert source.read_bytes <= offset
    source.read_bytes = 0
    assert index.line_at(source, offset) == 1501  # again: only from its mark
    assert source.read_bytes < 1000
    assert index.line_at(source, 0) == 1 and index.line_at(source, 11) == 2


def test_a_grown_file_goes_on_and_a_replaced_one_starts_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(log_lines, "MARK_BYTES", 64)
    monkeypatch.setattr(log_lines, "BLOCK_BYTES", 16)
    source = Counted(b"a\n" * 100)
    index = LineIndex()
    assert index.line_at(source, 200) == 101
    source.data += b"b\n" * 100
    assert index.line_at(source, 300) == 151
    source.data = b"xyz\n" * 10  # replaced: shorter than the marks counted
    assert index.line_at(source, 8) == 3
