"""how each run started (Airflow's run type: manual, scheduled, asset_triggered)

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02 21:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("trigger", sa.String(length=32), nullable=False, server_default="manual")
        )


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("trigger")
