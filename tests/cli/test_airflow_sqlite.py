"""The busy timeout of Airflow's SQLite connections (``cli.airflow_sqlite``) follows the thread
that writes: a worker thread waits for the write lock, an event loop does not wait for a write
transaction of its own process (whose commit may need that loop) and only briefly for another
process's."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.airflow_sqlite import (
    BUSY_TIMEOUT_SECONDS,
    EVENT_LOOP_BUSY_TIMEOUT_SECONDS,
    SYNC_CONNECT_ARGS,
)

# How long a thread of the test may take to write or fail once it should have: far below the
# minute a wrong busy timeout would keep it waiting.
ANSWER_SECONDS = 10


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "airflow.db"
    with sqlite3.connect(path) as setup:
        setup.execute("PRAGMA journal_mode = WAL")
        setup.execute("CREATE TABLE log (event TEXT)")
    return path


def connect(database: Path) -> sqlite3.Connection:
    """A connection as Airflow's sync engine opens it with Octotrain's connect arguments."""
    return sqlite3.connect(database, check_same_thread=False, **SYNC_CONNECT_ARGS)  # type: ignore[arg-type]


@pytest.fixture
def writer(database: Path) -> Iterator[sqlite3.Connection]:
    connection = connect(database)
    yield connection
    connection.close()


def write(connection: sqlite3.Connection, *, on_event_loop: bool) -> str:
    """Insert a row through a cursor (as SQLAlchemy does) in a thread of its own, on an event
    loop or not; how it went, once it went within ``ANSWER_SECONDS``."""
    outcome: list[str] = []

    def insert() -> None:
        started = time.monotonic()
        try:
            connection.cursor().execute("INSERT INTO log VALUES ('event')")
            connection.commit()
        except sqlite3.OperationalError as error:
            outcome.append(f"failed after {time.monotonic() - started:.1f}s: {error}")
        else:
            outcome.append("written")

    async def on_loop() -> None:
        insert()  # blocking the loop, as Airflow's action log does

    thread = threading.Thread(
        target=(lambda: asyncio.run(on_loop())) if on_event_loop else insert, daemon=True
    )
    thread.start()
    thread.join(ANSWER_SECONDS)
    return outcome[0] if outcome else "still waiting"


def test_an_event_loop_does_not_wait_for_a_write_transaction_of_its_own_process(
    database: Path, writer: sqlite3.Connection
) -> None:
    holder = connect(database)  # a worker thread's session, its commit due on the event loop
    try:
        holder.cursor().execute("INSERT INTO log VALUES ('holder')")
        started = time.monotonic()
        outcome = write(writer, on_event_loop=True)
        assert outcome.startswith("failed") and "database is locked" in outcome, outcome
        assert time.monotonic() - started < EVENT_LOOP_BUSY_TIMEOUT_SECONDS, outcome
    finally:
        holder.commit()
        holder.close()
    assert write(writer, on_event_loop=True) == "written"  # once it is committed


def test_an_event_loop_waits_briefly_for_another_process(
    database: Path, writer: sqlite3.Connection
) -> None:
    other_process = sqlite3.connect(database, isolation_level=None)  # not one of this process's
    try:
        other_process.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        outcome = write(writer, on_event_loop=True)
        waited = time.monotonic() - started
    finally:
        other_process.execute("COMMIT")
        other_process.close()
    assert outcome.startswith("failed") and "database is locked" in outcome, outcome
    assert EVENT_LOOP_BUSY_TIMEOUT_SECONDS * 0.9 <= waited < BUSY_TIMEOUT_SECONDS / 2, outcome


def test_a_worker_thread_waits_for_a_write_transaction_of_its_own_process(
    database: Path, writer: sqlite3.Connection
) -> None:
    holder = connect(database)
    holder.cursor().execute("INSERT INTO log VALUES ('holder')")
    done: list[str] = []
    waiting = threading.Thread(
        target=lambda: done.append(write(writer, on_event_loop=False)), daemon=True
    )
    waiting.start()
    waiting.join(EVENT_LOOP_BUSY_TIMEOUT_SECONDS * 2)
    assert done == [], "a worker thread's write did not wait for the write lock"
    holder.commit()
    holder.close()
    waiting.join(ANSWER_SECONDS)
    assert done == ["written"]
