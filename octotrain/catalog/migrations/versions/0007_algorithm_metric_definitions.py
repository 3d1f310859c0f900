"""algorithms: metric definitions, charts extracted from the train log

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03 19:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("algorithms", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("metric_definitions", sa.JSON(), nullable=False, server_default="[]")
        )


def downgrade() -> None:
    with op.batch_alter_table("algorithms", schema=None) as batch_op:
        batch_op.drop_column("metric_definitions")
