"""every table: ids never reused on SQLite (AUTOINCREMENT), as PostgreSQL's sequences never do

0009 did this for ``training_tasks``. A run's id, too, is named by compare links, a resumed
run's ``resumed_from``, lineage and bookmarks, and SQLite gave a deleted task's newest runs'
ids to the next runs of another task; so did every other table whose newest rows were deleted.
SQLite can only add AUTOINCREMENT by copying a table; ``migrate.upgrade`` turns foreign keys
off around the copies, as SQLite's table-copy procedure requires.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-06 10:40:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

TABLES = (
    "projects",
    "project_members",
    "resource_specs",
    "algorithms",
    "datasets",
    "dataset_versions",
    "data_caches",
    "model_repositories",
    "model_versions",
    "model_version_inputs",
    "runs",
    "node_holds",
)


def upgrade() -> None:
    _copy_tables(autoincrement=True)


def downgrade() -> None:
    _copy_tables(autoincrement=False)


def _copy_tables(*, autoincrement: bool) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for table in TABLES:
        with op.batch_alter_table(
            table, recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}
        ):
            pass
