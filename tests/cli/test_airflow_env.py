"""The embedded default's Airflow holds when its SQLite metadata DB is busy: a write through
Airflow's own engines (the sync one of the REST API and the scheduler, the async one of the
api-server) waits for another process's write transaction, however long the scheduler holds
it on a loaded machine, instead of failing with "database is locked" after sqlite3's default
5 s (which the REST API answered with a 500 "Database error").

Airflow reads its configuration once per process, so a probe process with the environment
``octotrain up`` gives ``airflow standalone`` opens Airflow's engines and writes through them,
while this test holds the write lock from a connection of its own."""

from __future__ import annotations

import json
import os
import queue
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.airflow_env import airflow_environment
from cli.airflow_sqlite import BUSY_TIMEOUT_SECONDS
from hooks.airflow.airflow_rest import AirflowRestClient
from hooks.local.local_process import free_port
from octotrain.settings import load_settings

OLD_BUSY_TIMEOUT_SECONDS = 5  # sqlite3's default, which Airflow kept
HOLD_SECONDS = OLD_BUSY_TIMEOUT_SECONDS + 2
MIN_BUSY_TIMEOUT_MS = 60_000  # a minute: longer than the scheduler holds its write lock
ANSWER_SECONDS = 120  # for the probe to import Airflow, or to write once the lock is free

# Reports what its connections are set to, then, told to, writes through both engines at once.
PROBE = """
import asyncio, json, sys, time
from sqlalchemy import text
from airflow import settings

NAMES = ("journal_mode", "busy_timeout")

def sync_pragmas():
    with settings.engine.begin() as connection:  # the first connection: Airflow sets WAL
        connection.exec_driver_sql("CREATE TABLE probe (engine TEXT)")
        return {name: connection.exec_driver_sql(f"PRAGMA {name}").scalar() for name in NAMES}

async def async_pragmas():
    async with settings.async_engine.connect() as connection:
        return {name: (await connection.exec_driver_sql(f"PRAGMA {name}")).scalar()
                for name in NAMES}

def write_sync():
    with settings.Session() as session:
        session.execute(text("INSERT INTO probe VALUES ('sync')"))
        session.commit()

async def write_async():
    async with settings.async_engine.begin() as connection:
        await connection.execute(text("INSERT INTO probe VALUES ('async')"))

async def report(engine, write):
    started = time.monotonic()
    try:
        await write()
    except Exception as error:
        outcome = f"failed after {time.monotonic() - started:.1f}s: {error}"
    else:
        outcome = f"written after {time.monotonic() - started:.1f}s"
    print(f"PROBE {engine} {outcome}", flush=True)

async def main():
    # The sync engine off the event loop, as Airflow's sync routes and processes use it.
    connections = {"sync": await asyncio.to_thread(sync_pragmas), "async": await async_pragmas()}
    print("PROBE ready " + json.dumps(connections), flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    print("PROBE writing", flush=True)
    await asyncio.gather(report("sync", lambda: asyncio.to_thread(write_sync)),
                         report("async", write_async))

asyncio.run(main())
"""


class Probe:
    """The probe process and its ``PROBE`` lines, read as they come."""

    def __init__(self, env: dict[str, str], errors: Path) -> None:
        with errors.open("wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-c", PROBE],
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self.errors = errors
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("PROBE "):
                self.lines.put(line.removeprefix("PROBE ").strip())

    def next_line(self, deadline: float) -> str | None:
        """The next line before ``deadline`` (monotonic), or None when none came by then."""
        try:
            return self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None

    def expect(self, prefix: str, seconds: float = ANSWER_SECONDS) -> str:
        line = self.next_line(time.monotonic() + seconds)
        assert line is not None and line.startswith(prefix), (line, self.stderr())
        return line.removeprefix(prefix).strip()

    def go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def stderr(self) -> str:
        return self.errors.read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


@pytest.fixture
def embedded_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment ``octotrain up`` gives Airflow, from a shell that sets no Airflow
    variables (the test session's own are dropped)."""
    for name in list(os.environ):
        if name.startswith("AIRFLOW"):
            monkeypatch.delenv(name)
    settings = load_settings({"OCTOTRAIN_STATE_DIR": str(tmp_path / "state")})
    return airflow_environment(settings, port=free_port())


@pytest.fixture
def probe(embedded_env: dict[str, str], tmp_path: Path) -> Iterator[Probe]:
    started = Probe(embedded_env, tmp_path / "probe.err")
    try:
        yield started
    finally:
        started.stop()


def test_airflows_engines_use_wal_and_wait_for_a_busy_metadata_db(
    embedded_env: dict[str, str], probe: Probe
) -> None:
    connections = json.loads(probe.expect("ready"))
    database = Path(embedded_env["AIRFLOW_HOME"]) / "airflow.db"
    holder = sqlite3.connect(database, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # the write lock, as the scheduler's sweep takes it
        holder.execute("INSERT INTO probe VALUES ('holder')")
        probe.go()
        probe.expect("writing")
        # Both writes must wait while the lock is held, past sqlite3's old 5 s.
        early = probe.next_line(time.monotonic() + HOLD_SECONDS)
        assert early is None, f"a write ended while the lock was held: {early}"
        holder.execute("COMMIT")
    finally:
        holder.close()
    outcomes = sorted(probe.expect("") for _ in range(2))
    assert [outcome.split(" after ")[0] for outcome in outcomes] == [
        "async written",
        "sync written",
    ], outcomes
    with sqlite3.connect(database) as check:
        rows = sorted(row[0] for row in check.execute("SELECT engine FROM probe"))
    assert rows == ["async", "holder", "sync"]
    for engine in ("sync", "async"):
        assert connections[engine]["journal_mode"] == "wal", connections
        assert connections[engine]["busy_timeout"] >= MIN_BUSY_TIMEOUT_MS, connections


def test_a_metadata_db_other_than_sqlite_gets_no_sqlite_connect_arguments(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """psycopg2 and asyncpg refuse sqlite3's ``timeout``: a shell that points Airflow at
    PostgreSQL must not get it, and connect arguments the shell sets are kept."""
    settings = load_settings({"OCTOTRAIN_STATE_DIR": str(tmp_path / "state")})
    monkeypatch.setenv("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "postgresql://127.0.0.1/airflow")
    env = airflow_environment(settings, port=8080)
    assert not [name for name in env if name.startswith("AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT")]
    monkeypatch.setenv("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", f"sqlite:///{tmp_path / 'a.db'}")
    monkeypatch.setenv("AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS", "mine.CONNECT_ARGS")
    env = airflow_environment(settings, port=8080)
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS"] == "mine.CONNECT_ARGS"
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS_ASYNC"].endswith("ASYNC_CONNECT_ARGS")


def test_octotrains_airflow_client_outwaits_a_busy_metadata_db() -> None:
    """``octotrain up`` and ``octotrain task run`` must not give up on an answer that the
    api-server is still allowed to be waiting for (the metadata DB's write lock)."""
    client = AirflowRestClient("http://127.0.0.1:8080")
    assert client.http.timeout.read is not None
    assert client.http.timeout.read > BUSY_TIMEOUT_SECONDS
