"""Log files as pages of lines a person can read: from either end of a file of any size, by byte
offset, in constant time (a page reads only what it shows, plus one block).

Lines are shown as a terminal would leave them: ANSI colour and cursor codes are stripped, a
carriage return (progress bars) keeps what was written after it, other control characters and
bytes that are not UTF-8 become U+FFFD, and a line longer than ``MAX_LINE_CHARS`` is cut with a
note of how much is left out, so binary or huge content never breaks a page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

MAX_PAGE_LINES = 2000
DEFAULT_PAGE_LINES = 200
# A page never reads more than this, whatever its lines: a file with no newline stays cheap.
MAX_PAGE_BYTES = 4 * 1024 * 1024
MAX_LINE_CHARS = 8000
BLOCK = 64 * 1024

_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erase
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: titles, hyperlinks
    r"|\x1b[@-Z\\-_]"  # other two-byte escapes
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class ByteRanges(Protocol):
    """A file that can be read at any offset: a local file or an object of the store."""

    size: int

    def read(self, start: int, end: int) -> bytes: ...


@dataclass(frozen=True)
class LogLine:
    offset: int  # of the line's first byte in the file
    text: str


@dataclass(frozen=True)
class LogPage:
    """Lines ``start`` … ``end`` of a file of ``size`` bytes.

    ``end`` is where the next page forward begins (``after=end``, which is how a live view
    follows a file), ``start`` where the previous one ends (``before=start``). A last line
    without its newline yet (a file being written) is shown with ``partial`` set, and ``end``
    stays at its start, so that following reads it again once it is complete.
    """

    size: int
    start: int
    end: int
    lines: list[LogLine]
    partial: bool

    @property
    def at_start(self) -> bool:
        return self.start == 0

    @property
    def at_end(self) -> bool:
        return self.end >= self.size or (self.partial and bool(self.lines))


def display_text(raw: bytes) -> str:
    """One line as a terminal would show it (see the module's docstring)."""
    text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
    if "\r" in text:
        text = next((part for part in reversed(text.split("\r")) if part), "")
    text = _CONTROL.sub("\ufffd", _ANSI.sub("", text))
    if len(text) > MAX_LINE_CHARS:
        left_out = len(text) - MAX_LINE_CHARS
        text = f"{text[:MAX_LINE_CHARS]} … [{left_out} more characters]"
    return text


def page_lines(lines: int) -> int:
    return max(1, min(lines, MAX_PAGE_LINES))


def tail(source: ByteRanges, lines: int = DEFAULT_PAGE_LINES) -> LogPage:
    """The last ``lines`` lines: where a view of a running task opens."""
    return page_before(source, source.size, lines)


def page_before(source: ByteRanges, end: int, lines: int = DEFAULT_PAGE_LINES) -> LogPage:
    """The ``lines`` lines that end at byte ``end`` (paging back through earlier content)."""
    end, wanted = max(0, min(end, source.size)), page_lines(lines)
    start, blocks, newlines = end, [], 0
    # Read back block by block until the blocks hold ``wanted`` whole lines (a newline before
    # each), the file's start, or the page's byte budget.
    while start > 0 and end - start < MAX_PAGE_BYTES and newlines <= wanted:
        step = min(BLOCK, start, MAX_PAGE_BYTES - (end - start))
        start -= step
        blocks.append(source.read(start, start + step))
        newlines += blocks[-1].count(b"\n")
    buffer = b"".join(reversed(blocks))
    pieces = _split(buffer, start)
    if start > 0 and len(pieces) > 1:
        pieces = pieces[1:]  # the first piece is the tail of a line that began earlier
    pieces = pieces[-wanted:]
    partial = bool(pieces) and not pieces[-1][1].endswith(b"\n") and end == source.size
    first = pieces[0][0] if pieces else end
    return _page(source.size, first, pieces[-1][0] if partial else end, pieces, partial)


def page_after(source: ByteRanges, start: int, lines: int = DEFAULT_PAGE_LINES) -> LogPage:
    """The ``lines`` lines from byte ``start`` on (paging forward, following a live file)."""
    start, wanted = max(0, min(start, source.size)), page_lines(lines)
    end, blocks, newlines = start, [], 0
    while end < source.size and end - start < MAX_PAGE_BYTES and newlines < wanted:
        step = min(BLOCK, source.size - end, MAX_PAGE_BYTES - (end - start))
        blocks.append(source.read(end, end + step))
        end += step
        newlines += blocks[-1].count(b"\n")
    pieces = _split(b"".join(blocks), start)[:wanted]
    if not pieces:
        return _page(source.size, start, start, [], False)
    last_offset, last_raw = pieces[-1]
    # A last line without its newline is being written when it reaches the end of the file
    # (read it again later); otherwise it is longer than a page, and the next page goes on.
    partial = not last_raw.endswith(b"\n") and last_offset + len(last_raw) >= source.size
    stop = last_offset if partial else last_offset + len(last_raw)
    return _page(source.size, start, stop, pieces, partial)


def _split(buffer: bytes, base: int) -> list[tuple[int, bytes]]:
    """``buffer`` (read from offset ``base``) as (offset, raw line with its newline) pairs."""
    pieces, position = [], 0
    while position < len(buffer):
        newline = buffer.find(b"\n", position)
        stop = len(buffer) if newline < 0 else newline + 1
        pieces.append((base + position, buffer[position:stop]))
        position = stop
    return pieces


def _page(
    size: int, start: int, end: int, pieces: list[tuple[int, bytes]], partial: bool
) -> LogPage:
    lines = [LogLine(offset, display_text(raw)) for offset, raw in pieces]
    return LogPage(size=size, start=start, end=end, lines=lines, partial=partial)
