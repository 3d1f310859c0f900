"""runs: the real values of a run's secret variables and parameters, kept apart

The plan Airflow carries between the stages (XCom, shown in Airflow's UI) and the catalog's
copy of it have them masked; the stages that start nodes read them from here.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03 12:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("secrets", sa.JSON(), nullable=False, server_default="{}"))


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("secrets")
