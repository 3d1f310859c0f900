"""The door to the catalog database: engines, sessions and migrations from the settings."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from octotrain.settings import get_settings

SQLITE_BUSY_TIMEOUT_MS = 30_000


def _sqlite_pragmas(dbapi_connection: object, _record: object) -> None:
    # Foreign keys are off by default in SQLite; WAL lets the nodes of a run read while
    # another stage writes, and with it synchronous=NORMAL keeps every commit atomic and
    # durable across crashes of the process (only a power cut may lose the last commits)
    # without an fsync per commit.
    cursor = dbapi_connection.cursor()  # type: ignore[attr-defined]
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.close()


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite files get their folder created and safe pragmas."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True)


class CatalogHook:
    """Sessions on the catalog named by ``url`` (the configured catalog by default)."""

    def __init__(self, url: str | None = None) -> None:
        self.url = url or get_settings().catalog_url
        self.engine = make_engine(self.url)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    def migrate(self) -> None:
        """Create or upgrade the catalog schema to the newest revision. Alembic is imported
        here: it takes 0.6 s, which every task process would pay when it parses the DAG file."""
        from octotrain.catalog import migrate

        migrate.upgrade(self.engine)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session committed on success and rolled back on any error: nothing half-written."""
        session = self._sessions()
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()

    def dispose(self) -> None:
        self.engine.dispose()


@lru_cache(maxsize=4)
def catalog_for(url: str) -> CatalogHook:
    """One hook (and connection pool) per URL per process."""
    return CatalogHook(url)


def default_catalog() -> CatalogHook:
    return catalog_for(get_settings().catalog_url)
