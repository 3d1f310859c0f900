"""Lists read a page at a time, in the database: ``LIMIT``/``OFFSET`` and a count of the whole,
as Airflow's own REST API pages (``limit``, ``offset``, ``total_entries``). A list used to read
every row and cut the page in Python: 2,000 tasks took 856 ms for a page of 50 (``bench.lists``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import Select, func
from sqlalchemy.orm import Session

from octotrain.errors import InvalidQuery

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000
# The databases' integers: a larger offset fails in SQLite's driver (the fuzzer's find).
MAX_OFFSET = 2**31 - 1
T = TypeVar("T")


@dataclass(frozen=True)
class Window:
    """Which part of a list: ``limit`` items from ``offset`` (from 0)."""

    limit: int = DEFAULT_LIMIT
    offset: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_LIMIT:
            raise InvalidQuery.one("limit", f"must be within [1, {MAX_LIMIT}], got {self.limit}")
        if not 0 <= self.offset <= MAX_OFFSET:
            raise InvalidQuery.one("offset", f"must be within [0, {MAX_OFFSET}], got {self.offset}")


@dataclass(frozen=True)
class Page(Generic[T]):
    """One window of a list, and how long the whole list is."""

    items: list[T]
    total: int


def paged(session: Session, query: Select[Any], window: Window, *, rows: bool = False) -> Page[Any]:
    """The ``window`` of ``query``'s results (its first column's objects, or whole ``rows``)
    and their number in all, in two statements; ``query`` must be ordered."""
    # The query's own FROM and WHERE with count(*) for its columns: the database counts from
    # its indexes, without making the rows a subquery of the count would.
    counted = query.with_only_columns(func.count(), maintain_column_froms=True).order_by(None)
    total = session.scalar(counted)
    window_query = query.limit(window.limit).offset(window.offset)
    items = list(session.execute(window_query).tuples() if rows else session.scalars(window_query))
    return Page(items, int(total or 0))


def every_item(read: Callable[[Window], Page[T]], *, limit: int = MAX_LIMIT) -> Iterator[T]:
    """Every item of a paged list, a page at a time (what the command line prints)."""
    offset = 0
    while True:
        page = read(Window(limit=limit, offset=offset))
        yield from page.items
        offset += len(page.items)
        if not page.items or offset >= page.total:
            return
