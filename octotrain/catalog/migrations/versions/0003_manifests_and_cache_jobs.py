"""manifests (checksums) of stored files; data caches filled by a job; mount volumes

Columns added to existing tables get a server default so that an installed catalog keeps
its rows (their manifests are empty: such files are staged without verification).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02 14:44:03.634921
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("data_caches", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("ttl_hours", sa.Integer(), nullable=False, server_default="168")
        )
        batch_op.add_column(
            sa.Column("refresh_requested", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.add_column(sa.Column("message", sa.Text(), nullable=False, server_default=""))
        batch_op.add_column(sa.Column("manifest", sa.JSON(), nullable=False, server_default="{}"))
        batch_op.add_column(
            sa.Column("content_digest", sa.String(length=64), nullable=False, server_default="")
        )

    with op.batch_alter_table("resource_specs", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("mount_volume", sa.String(length=64), nullable=False, server_default="")
        )

    with op.batch_alter_table("dataset_versions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("manifest", sa.JSON(), nullable=False, server_default="{}"))
        batch_op.add_column(
            sa.Column("content_digest", sa.String(length=64), nullable=False, server_default="")
        )

    with op.batch_alter_table("model_versions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("manifest", sa.JSON(), nullable=False, server_default="{}"))
        batch_op.add_column(
            sa.Column("content_digest", sa.String(length=64), nullable=False, server_default="")
        )


def downgrade() -> None:
    with op.batch_alter_table("model_versions", schema=None) as batch_op:
        batch_op.drop_column("content_digest")
        batch_op.drop_column("manifest")

    with op.batch_alter_table("dataset_versions", schema=None) as batch_op:
        batch_op.drop_column("content_digest")
        batch_op.drop_column("manifest")

    with op.batch_alter_table("resource_specs", schema=None) as batch_op:
        batch_op.drop_column("mount_volume")

    with op.batch_alter_table("data_caches", schema=None) as batch_op:
        batch_op.drop_column("content_digest")
        batch_op.drop_column("manifest")
        batch_op.drop_column("message")
        batch_op.drop_column("refresh_requested")
        batch_op.drop_column("ttl_hours")
