"""Line numbers in a log file that is paged by byte offset.

A page of a log says where its lines start in bytes; what line that is takes counting every
newline before it, which for the tail of a gigabyte log is a gigabyte read. A ``LineIndex``
counts them once and remembers the count at marks every ``MARK_BYTES``: a later page reads at
most that much to number its lines. Logs only grow, so a file that has grown is counted from
its last mark on; one that is shorter than the index's last mark was replaced, and is counted
afresh.
"""

from __future__ import annotations

from bisect import bisect_right

from octotrain.log_text import ByteRanges

# Newlines are counted in blocks of this size; a mark is kept every MARK_BYTES.
BLOCK_BYTES = 1024 * 1024
MARK_BYTES = 4 * BLOCK_BYTES


class LineIndex:
    """The newlines counted before each mark of one file."""

    def __init__(self) -> None:
        self.offsets: list[int] = [0]  # the marks, ascending
        self.lines_before: list[int] = [0]  # newlines before each mark

    def line_at(self, source: ByteRanges, offset: int) -> int:
        """The number (from 1) of the line that starts at byte ``offset``."""
        offset = max(0, min(offset, source.size))
        if source.size < self.offsets[-1]:  # the file was replaced by a shorter one
            self.offsets, self.lines_before = [0], [0]
        while self.offsets[-1] + MARK_BYTES <= offset:
            start = self.offsets[-1]
            self.offsets.append(start + MARK_BYTES)
            self.lines_before.append(self.lines_before[-1] + _newlines(source, start, MARK_BYTES))
        at = bisect_right(self.offsets, offset) - 1
        mark = self.offsets[at]
        return self.lines_before[at] + _newlines(source, mark, offset - mark) + 1


def _newlines(source: ByteRanges, start: int, length: int) -> int:
    count, end = 0, start + length
    while start < end:
        stop = min(start + BLOCK_BYTES, end)
        count += source.read(start, stop).count(b"\n")
        start = stop
    return count
