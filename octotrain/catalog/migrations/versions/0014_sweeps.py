"""sweeps: hyper-parameter sweeps of a task; a run may be a sweep's trial; a run may be pruned

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07 10:20:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

RUN_STATES = ("queued", "running", "success", "failed", "stopped")
# SQLite copies the table to alter it: the copy keeps AUTOINCREMENT (ids never reused).
NEVER_REUSED_IDS = {"sqlite_autoincrement": True}
SWEEP_STATES = ("created", "running", "stopping", "finished", "stopped", "failed")


def _states(values: tuple[str, ...]) -> str:
    return "state IN (" + ", ".join(f"'{value}'" for value in values) + ")"


def upgrade() -> None:
    op.create_table(
        "sweeps",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column(
            "state",
            sa.Enum(
                *SWEEP_STATES,
                name="sweep_state",
                native_enum=False,
                create_constraint=True,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("created_by", sa.String(length=256), nullable=False),
        sa.Column("airflow_run_id", sa.String(length=250), nullable=False),
        sa.Column("best_run_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["task_id"],
            ["training_tasks.id"],
            name=op.f("fk_sweeps_task_id_training_tasks"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["best_run_id"],
            ["runs.id"],
            name=op.f("fk_sweeps_best_run_id_runs"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sweeps")),
        sa.UniqueConstraint("task_id", "name", name=op.f("uq_sweeps_task_id")),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("runs", table_kwargs=NEVER_REUSED_IDS) as batch:
        batch.add_column(sa.Column("sweep_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("trial_number", sa.Integer(), nullable=True))
        batch.create_foreign_key(
            op.f("fk_runs_sweep_id_sweeps"), "sweeps", ["sweep_id"], ["id"], ondelete="CASCADE"
        )
        batch.create_unique_constraint(op.f("uq_runs_sweep_id"), ["sweep_id", "trial_number"])
        batch.drop_constraint(op.f("ck_runs_run_state"), type_="check")
        batch.create_check_constraint("run_state", _states((*RUN_STATES, "pruned")))


def downgrade() -> None:
    op.execute("UPDATE runs SET state = 'stopped' WHERE state = 'pruned'")
    with op.batch_alter_table("runs", table_kwargs=NEVER_REUSED_IDS) as batch:
        batch.drop_constraint(op.f("ck_runs_run_state"), type_="check")
        batch.create_check_constraint("run_state", _states(RUN_STATES))
        batch.drop_constraint(op.f("uq_runs_sweep_id"), type_="unique")
        batch.drop_constraint(op.f("fk_runs_sweep_id_sweeps"), type_="foreignkey")
        batch.drop_column("trial_number")
        batch.drop_column("sweep_id")
    op.drop_table("sweeps")
