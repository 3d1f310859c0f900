"""Bring a catalog database to the newest schema with Alembic (never ``create_all``), so that
an existing installation is upgraded in place and its tasks and model versions are kept."""

from __future__ import annotations

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine

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
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
