"""training_tasks: ids never reused on SQLite (AUTOINCREMENT), as PostgreSQL's sequence never does

A task's id names its Airflow DAG (``octotrain_task_<id>``), and Airflow keeps a deleted
task's DAG, paused and stale, with its runs' history. SQLite gives a new row the highest id
plus one, so the next task after deleting the newest one got the old task's DAG, paused and
with the old runs. SQLite can only add AUTOINCREMENT by copying the table; ``migrate.upgrade``
turns foreign keys off around it, as SQLite's table-copy procedure requires (else dropping the
old table would delete every run with it).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04 10:40:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    _copy_training_tasks(autoincrement=True)


def downgrade() -> None:
    _copy_training_tasks(autoincrement=False)


def _copy_training_tasks(*, autoincrement: bool) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    with op.batch_alter_table(
        "training_tasks", recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}
    ):
        pass
