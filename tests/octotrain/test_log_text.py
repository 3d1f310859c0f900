"""Pages of a log file: from either end, by offset, with lines shown as a terminal would."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from octotrain import log_text
from octotrain.log_text import display_text, page_after, page_before, tail


@dataclass
class Bytes:
    """A file in memory that counts what is read of it."""

    data: bytes
    read_bytes: int = 0

    @property
    def size(self) -> int:
        return len(self.data)

    def read(self, start: int, end: int) -> bytes:
        self.read_bytes += max(0, end - start)
        return self.data[start:end]


def numbered(count: int) -> bytes:
    return b"".join(b"line %d\n" % number for number in range(1, count + 1))


def test_the_tail_reads_one_block_of_a_big_file() -> None:
    source = Bytes(numbered(2_000_000))
    page = tail(source, 200)
    assert [line.text for line in page.lines] == [f"line {n}" for n in range(1_999_801, 2_000_001)]
    assert page.at_end and not page.at_start and not page.partial
    assert source.read_bytes <= log_text.BLOCK


def test_paging_back_and_forth_meets_at_the_same_offsets() -> None:
    source = Bytes(numbered(1000))
    last = tail(source, 100)
    earlier = page_before(source, last.start, 100)
    assert earlier.lines[-1].text == "line 900" and earlier.end == last.start
    again = page_after(source, earlier.end, 100)
    assert again.lines == last.lines
    first = page_after(source, 0, 10)
    assert first.at_start and next(line.text for line in first.lines) == "line 1"
    assert page_before(source, first.start, 10).lines == []


def test_a_line_being_written_is_shown_and_read_again_once_complete() -> None:
    source = Bytes(b"one\ntwo\nthr")
    page = tail(source)
    assert [line.text for line in page.lines] == ["one", "two", "thr"] and page.partial
    assert page.end == 8  # where "thr" begins
    source.data += b"ee\nfour\n"
    follow = page_after(source, page.end)
    assert [line.text for line in follow.lines] == ["three", "four"] and not follow.partial
    assert page_after(source, follow.end).lines == [] and follow.at_end


def test_ansi_codes_carriage_returns_and_binary_never_show_raw() -> None:
    assert display_text(b"\x1b[31mred\x1b[0m and \x1b]0;title\x07plain\n") == "red and plain"
    assert display_text(b"progress 10%\rprogress 50%\rprogress 100%\r\n") == "progress 100%"
    assert display_text(b"bin\x00\x07\xff\xfeary\tok") == "bin\ufffd\ufffd\ufffd\ufffdary\tok"
    assert display_text("训练 损失".encode()) == "训练 损失"


def test_a_huge_line_is_cut_and_a_page_never_reads_past_its_budget() -> None:
    source = Bytes(b"x" * (10 * 1024 * 1024) + b"\nend\n")
    page = tail(source, 5)
    assert [line.text for line in page.lines][-1] == "end"
    assert source.read_bytes <= log_text.MAX_PAGE_BYTES
    source.read_bytes = 0
    first = page_after(source, 0, 5)
    assert len(first.lines) == 1 and first.lines[0].text.endswith("more characters]")
    assert len(first.lines[0].text) < log_text.MAX_LINE_CHARS + 40
    assert source.read_bytes <= log_text.MAX_PAGE_BYTES
    assert first.end == log_text.MAX_PAGE_BYTES  # the next page goes on mid-line


@given(
    st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")), max_size=60),
    st.integers(1, 7),
    st.booleans(),
)
def test_pages_cover_every_line_exactly_once(
    raw_lines: list[bytes], per_page: int, ends_with_newline: bool
) -> None:
    data = b"\n".join(raw_lines) + (b"\n" if ends_with_newline and raw_lines else b"")
    source = Bytes(data)
    expected = [line + b"\n" for line in data.split(b"\n")]
    expected[-1] = expected[-1][:-1]  # what follows the last newline
    expected = [line for line in expected if line]
    forward, offset = [], 0
    while True:
        page = page_after(source, offset, per_page)
        forward.extend(page.lines)
        if page.partial or page.end == offset or page.end >= source.size:
            break
        offset = page.end
    backward, end = [], source.size
    while True:
        page = page_before(source, end, per_page)
        backward[:0] = page.lines
        if page.at_start or not page.lines:
            break
        end = page.start
    offsets = [sum(len(line) for line in expected[:n]) for n in range(len(expected))]
    assert [line.offset for line in forward] == offsets
    assert [line.offset for line in backward] == offsets
    assert [line.text for line in backward] == [display_text(line) for line in expected]
