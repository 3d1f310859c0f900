"""Reading whole lists a page at a time (what the command line prints)."""

from __future__ import annotations

from octotrain.catalog.paging import Page, Window, every_item


def test_every_item_follows_the_pages_to_the_total() -> None:
    items = list(range(7))
    asked: list[Window] = []

    def read(window: Window) -> Page[int]:
        asked.append(window)
        return Page(items[window.offset : window.offset + window.limit], len(items))

    assert list(every_item(read, limit=3)) == items
    assert [window.offset for window in asked] == [0, 3, 6]


def test_a_list_that_shrinks_while_read_ends_the_reading() -> None:
    def read(window: Window) -> Page[int]:
        return Page([] if window.offset else [1, 2], 5)  # five when counted, two when read

    assert list(every_item(read, limit=2)) == [1, 2]
