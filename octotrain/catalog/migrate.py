"""Bring a catalog database to the newest schema with Alembic (never ``create_all``), so that
an existing installation is upgraded in place and its tasks and model versions are kept.

The catalog's revision is kept in ``catalog_alembic_version``, not Alembic's default
``alembic_version``: the sweeps' Optuna studies live in the same database
(``hooks/sweeps/sweep_study.py``), and Optuna keeps its own schema's revision under that
default name. A catalog made before sweeps has its revision there; it is moved once.
"""

from __future__ import annotations

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, inspect

MIGRATIONS = Path(__file__).with_name("migrations")
VERSION_TABLE = "catalog_alembic_version"
EARLIER_VERSION_TABLE = "alembic_version"
# The catalog's revisions are numbered "0001", "0002", ...; Optuna's are not.
CATALOG_REVISION_DIGITS = 4


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
                _move_earlier_version_table(connection)
                config.attributes["connection"] = connection
                command.upgrade(config, revision)
                if sqlite:
                    _check_foreign_keys(connection)
        finally:
            if sqlite:
                _foreign_keys(connection, on=True)


def _move_earlier_version_table(connection: Connection) -> None:
    """A catalog migrated before its revision table had its own name keeps it under Alembic's
    default name: renamed, so that Optuna finds that name free for its own."""
    tables = set(inspect(connection).get_table_names())
    if VERSION_TABLE in tables or EARLIER_VERSION_TABLE not in tables:
        return
    revisions = connection.exec_driver_sql(
        f"SELECT version_num FROM {EARLIER_VERSION_TABLE}"
    ).scalars()
    if all(len(r) == CATALOG_REVISION_DIGITS and r.isdigit() for r in revisions):
        connection.exec_driver_sql(f"ALTER TABLE {EARLIER_VERSION_TABLE} RENAME TO {VERSION_TABLE}")


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
