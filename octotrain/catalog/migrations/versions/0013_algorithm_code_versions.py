"""algorithm_code_versions: an algorithm's uploaded code folders, one immutable version each

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-07 04:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "algorithm_code_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("algorithm_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("uploaded_by", sa.String(length=256), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("object_prefix", sa.String(length=512), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("file_count", sa.Integer(), nullable=False),
        sa.Column("manifest", sa.JSON(), nullable=False),
        sa.Column("content_digest", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["algorithm_id"],
            ["algorithms.id"],
            name=op.f("fk_algorithm_code_versions_algorithm_id_algorithms"),
            ondelete="RESTRICT",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_algorithm_code_versions")),
        sa.UniqueConstraint(
            "algorithm_id", "version", name=op.f("uq_algorithm_code_versions_algorithm_id")
        ),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    op.drop_table("algorithm_code_versions")
