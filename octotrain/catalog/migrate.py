"""Bring a catalog database to the newest schema with Alembic (never ``create_all``), so that
an existing installation is upgraded in place and its tasks and model versions are kept."""

from __future__ import annotations

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine

MIGRATIONS = Path(__file__).with_name("migrations")


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the catalog behind ``engine`` to ``revision``."""
    config = alembic_config(engine.url.render_as_string(hide_password=False))
    # Alembic's per-step INFO lines are noise for the command that calls this.
    logging.getLogger("alembic").setLevel(logging.WARNING)
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:
            _foreign_keys(connection, on=False)
        try:
            with connection.begin():
                config.attributes["connection"] = connection
                command.upgrade(config, revision)
                if sqlite:
                    _check_foreign_keys(connection)
        finally:
            if sqlite:
                _foreign_keys(connection, on=True)


def _foreign_keys(connection: Connection, *, on: bool) -> None:
    """SQLite copies a table to alter it, and dropping the old copy with foreign keys on would
    delete (``ON DELETE CASCADE``) or refuse what refers to it; its own table-copy procedure
    turns them off first. The pragma is ignored inside a transaction, so it is sent between."""
    connection.exec_driver_sql(f"PRAGMA foreign_keys={'ON' if on else 'OFF'}")
    connection.commit()


def _check_foreign_keys(connection: Connection) -> None:
    """With foreign keys off nothing checked them: a reference a migration broke rolls it back."""
    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
    if broken:
        raise RuntimeError(f"the catalog migration broke foreign keys: {broken[:5]}")
