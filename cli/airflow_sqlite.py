"""Airflow's SQLite metadata DB (the embedded default's) under contention.

The scheduler, the dag-processor and the api-server all write to one SQLite file, and only one
writer at a time may. Airflow 3.3 already turns WAL on for every connection of its sync engine
(``airflow.utils.orm_event_handlers``; the mode is kept in the file, so the api-server's async
engine uses it too), which lets readers go on while one writes. It leaves the busy timeout at
sqlite3's 5 s, though: a write that waited that long for the scheduler failed with "database is
locked", a 500 "Database error" for a REST trigger on a loaded machine. Airflow's
``[database] sql_alchemy_connect_args`` and ``sql_alchemy_connect_args_async`` name the dicts
below by import path; both drivers (sqlite3, and aiosqlite, which hands them to sqlite3) take
``timeout``. Psycopg2 and asyncpg refuse it, so these are for SQLite only.
"""

from __future__ import annotations

BUSY_TIMEOUT_SECONDS = 60

# Two dicts, one per engine: Airflow adds its own entries to the sync engine's in place.
SYNC_CONNECT_ARGS: dict[str, object] = {"timeout": BUSY_TIMEOUT_SECONDS}
ASYNC_CONNECT_ARGS: dict[str, object] = {"timeout": BUSY_TIMEOUT_SECONDS}


def sqlite_contention_settings(metadata_url: str) -> dict[str, str]:
    """Airflow settings (environment variables) that make writes to the metadata DB at
    ``metadata_url`` wait for one another; none unless it is SQLite."""
    if not metadata_url.startswith("sqlite"):
        return {}
    return {
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS": f"{__name__}.SYNC_CONNECT_ARGS",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS_ASYNC": f"{__name__}.ASYNC_CONNECT_ARGS",
    }
