"""The console's task list: which tasks a page shows, in which order, and the links that change
that (sort headers, page links). Query parameters, so that a sorted, filtered page is a plain
URL the browser's history and Airflow's address bar keep:

- ``sort``: a column (``name``, ``id``, ``last_run``, ``created``, ``updated``, ``priority``),
  ``-`` in front for descending, as Airflow's own ``order_by`` is written;
- ``page`` (from 1) and ``per_page`` (one of ``PAGE_SIZES``);
- ``q`` and ``status``, the filters, kept by every link.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from octotrain.catalog.models import Run, TrainingTask
from octotrain.catalog.paging import Page as ListedPage
from octotrain.catalog.paging import Window
from octotrain.tasks import TASK_SORTS

PAGE_SIZES = (10, 25, 50, 100)
DEFAULT_PAGE_SIZE = 50
DEFAULT_SORT = "id"
# A page number past the last shows the last page; this bound only keeps it a sane integer.
MAX_PAGE = 2**31 - 1
# The first click on a column sorts it this way: names and ids A→Z, times newest first,
# priorities highest first (the one Airflow's scheduler runs first).
FIRST_DIRECTION_DESCENDING = {"last_run", "created", "updated", "priority"}


# Every accepted ``sort`` value, so that a bad one is refused naming them all.
TaskSort = enum.StrEnum(
    "TaskSort",
    {
        f"{key}_{way}": f"{sign}{key}"
        for key in TASK_SORTS
        for way, sign in (("ascending", ""), ("descending", "-"))
    },
)
PageSize = enum.IntEnum("PageSize", {f"rows_{size}": size for size in PAGE_SIZES})
# The defaults as the route's parameters take them.
SORT_BY_ID = TaskSort(DEFAULT_SORT)
FIFTY_PER_PAGE = PageSize(DEFAULT_PAGE_SIZE)


@dataclass(frozen=True)
class ListQuery:
    """One view of the list: its filters, order and page, and the URLs of the others."""

    base: str  # the page's own URL, without a query
    q: str
    status: str | None
    sort: str
    page: int
    per_page: int

    def url(self, **changes: Any) -> str:
        """This view's URL with ``changes``; defaults are left out, so URLs stay short."""
        values = {"q": self.q, "status": self.status or "", "sort": self.sort,
                  "page": self.page, "per_page": self.per_page} | changes  # fmt: skip
        defaults = {"q": "", "status": "", "sort": DEFAULT_SORT, "page": 1,
                    "per_page": DEFAULT_PAGE_SIZE}  # fmt: skip
        kept = {name: value for name, value in values.items() if value != defaults[name]}
        return f"{self.base}?{urlencode(kept)}" if kept else self.base

    def sort_url(self, column: str) -> str:
        """The header link of ``column``: the other direction if the list is sorted by it,
        else its first direction; back to page 1 either way."""
        if self.sort.removeprefix("-") == column:
            target = column if self.sort.startswith("-") else f"-{column}"
        else:
            target = f"-{column}" if column in FIRST_DIRECTION_DESCENDING else column
        return self.url(sort=target, page=1)

    def aria_sort(self, column: str) -> str | None:
        """``aria-sort`` of ``column``'s header: only the sorted column has one."""
        if self.sort.removeprefix("-") != column:
            return None
        return "descending" if self.sort.startswith("-") else "ascending"


@dataclass(frozen=True)
class Page:
    """The tasks of one page of the sorted list, and where it lies in the whole."""

    tasks: list[tuple[TrainingTask, Run | None]]  # each with its last run
    number: int  # from 1
    count: int  # pages in all, at least 1
    total: int  # tasks in all
    first: int  # position of the page's first task, from 1 (0 when there is none)
    last: int


def page_count(total: int, per_page: int) -> int:
    return max(1, -(-total // per_page))


def window_of(page: int, per_page: int) -> Window:
    """The rows of page ``page`` (from 1)."""
    return Window(limit=per_page, offset=(page - 1) * per_page)


def page_from(listed: ListedPage[tuple[TrainingTask, Run | None]], number: int,
              per_page: int) -> Page:  # fmt: skip
    """Page ``number`` as the list shows it."""
    start = (number - 1) * per_page
    first = start + 1 if listed.items else 0
    count = page_count(listed.total, per_page)
    return Page(listed.items, number, count, listed.total, first, start + len(listed.items))


def page_links(number: int, count: int, around: int = 2) -> list[int | None]:
    """The page numbers to link: the first, the last and ``around`` each side of ``number``;
    ``None`` where numbers are left out."""
    near = range(max(1, number - around), min(count, number + around) + 1)
    shown = sorted({1, count, *near})
    links: list[int | None] = []
    for previous, current in zip([0, *shown], shown, strict=False):
        if previous and current - previous == 2:
            links.append(previous + 1)  # one number takes the room of the gap's mark
        elif previous and current - previous > 2:
            links.append(None)
        links.append(current)
    return links
