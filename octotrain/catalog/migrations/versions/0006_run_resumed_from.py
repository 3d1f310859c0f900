"""runs: the earlier run a run resumes from its checkpoint (lineage)

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03 18:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("resumed_from_id", sa.Integer(), nullable=True))
        batch_op.create_foreign_key(
            op.f("fk_runs_resumed_from_id_runs"), "runs", ["resumed_from_id"], ["id"],
            ondelete="SET NULL",
        )  # fmt: skip


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("fk_runs_resumed_from_id_runs"), type_="foreignkey")
        batch_op.drop_column("resumed_from_id")
