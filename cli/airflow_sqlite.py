"""Airflow's SQLite metadata DB (the embedded default's) under contention.

The scheduler, the dag-processor and the api-server all write to one SQLite file, and only one
writer at a time may. Airflow 3.3 already turns WAL on for every connection of its sync engine
(``airflow.utils.orm_event_handlers``; the mode is kept in the file, so the api-server's async
engine uses it too), which lets readers go on while one writes. It leaves the busy timeout at
sqlite3's 5 s, though: a write that waited that long for the scheduler failed with "database is
locked", a 500 "Database error" for a REST trigger on a loaded machine. Airflow's
``[database] sql_alchemy_connect_args`` and ``sql_alchemy_connect_args_async`` name the dicts
below by import path; both drivers (sqlite3, and aiosqlite, which hands them to sqlite3) take
``timeout`` and ``factory``. Psycopg2 and asyncpg refuse them, so these are for SQLite only.

A write must not wait on the api-server's event loop, though. Airflow's action log
(``airflow.api_fastapi.logging.decorators``, on every POST/PATCH/DELETE of its REST API) is an
``async`` dependency that commits through the sync engine on the event loop. A sync route of the
same api-server (a trigger, a task's start through the execution API) writes in a worker thread
and commits only in its session dependency's exit, which the event loop runs: while the action
log waits for that route's write lock, the route cannot commit. Every request of the api-server
then hung for the whole busy timeout, the action log failed with "database is locked" (a 500
"Database error") and tasks' calls timed out. ``EventLoopAwareConnection`` keeps the minute for
every other thread and bounds the event loop's wait instead.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import weakref
from typing import Any

BUSY_TIMEOUT_SECONDS = 60
# On an event loop: long enough for another process's usual write (the scheduler's), short
# enough that the api-server's stall stays far below its clients' timeouts (a task's calls to
# the execution API give up after 5 s).
EVENT_LOOP_BUSY_TIMEOUT_SECONDS = 1

_connections: weakref.WeakSet[EventLoopAwareConnection] = weakref.WeakSet()
_connections_lock = threading.Lock()


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _in_write_transaction(connection: sqlite3.Connection) -> bool:
    """Whether ``connection`` has a transaction open: sqlite3 opens one only before a write."""
    try:
        return connection.in_transaction
    except sqlite3.ProgrammingError:  # closed
        return False


class EventLoopAwareConnection(sqlite3.Connection):
    """A sqlite3 connection whose busy timeout depends on the thread that uses it: a minute in
    a worker thread or another process, ``EVENT_LOOP_BUSY_TIMEOUT_SECONDS`` on an event loop,
    and none there while another connection of this process has a write transaction open (its
    commit may be waiting for that very event loop)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._busy_timeout_ms: int | None = None  # as connected: set at the first cursor
        with _connections_lock:
            _connections.add(self)

    def cursor(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        """SQLAlchemy runs every statement through a new cursor: the timeout is set first."""
        wanted = self._wanted_busy_timeout_ms()
        if wanted != self._busy_timeout_ms:
            super().execute(f"PRAGMA busy_timeout = {wanted}").close()
            self._busy_timeout_ms = wanted
        return super().cursor(*args, **kwargs)

    def _wanted_busy_timeout_ms(self) -> int:
        if not _on_event_loop():
            return BUSY_TIMEOUT_SECONDS * 1000
        with _connections_lock:
            others = [other for other in _connections if other is not self]
        if any(_in_write_transaction(other) for other in others):
            return 0
        return EVENT_LOOP_BUSY_TIMEOUT_SECONDS * 1000


# Two dicts, one per engine: Airflow adds its own entries to the sync engine's in place.
SYNC_CONNECT_ARGS: dict[str, object] = {
    "timeout": BUSY_TIMEOUT_SECONDS,
    "factory": EventLoopAwareConnection,
}
ASYNC_CONNECT_ARGS: dict[str, object] = {
    "timeout": BUSY_TIMEOUT_SECONDS,
    "factory": EventLoopAwareConnection,
}


def sqlite_contention_settings(metadata_url: str) -> dict[str, str]:
    """Airflow settings (environment variables) that make writes to the metadata DB at
    ``metadata_url`` wait for one another, but never on an event loop for its own process;
    none unless it is SQLite."""
    if not metadata_url.startswith("sqlite"):
        return {}
    return {
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS": f"{__name__}.SYNC_CONNECT_ARGS",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS_ASYNC": f"{__name__}.ASYNC_CONNECT_ARGS",
    }
