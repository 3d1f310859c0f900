"""projects: members and node limit; lineage edges; cache sizes; task container user

Columns added to existing tables get a server default so that an installed catalog keeps
its rows.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02 13:51:30.132590
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "project_members",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("username", sa.String(length=256), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_project_members_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_project_members")),
        sa.UniqueConstraint("project_id", "username", name=op.f("uq_project_members_project_id")),
    )
    op.create_table(
        "model_version_inputs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model_version_id", sa.Integer(), nullable=False),
        sa.Column("dataset_version_id", sa.Integer(), nullable=True),
        sa.Column("input_model_version_id", sa.Integer(), nullable=True),
        sa.Column("via", sa.String(length=80), nullable=False),
        sa.CheckConstraint(
            "(dataset_version_id IS NULL) <> (input_model_version_id IS NULL)",
            name=op.f("ck_model_version_inputs_one_input"),
        ),
        sa.ForeignKeyConstraint(
            ["dataset_version_id"],
            ["dataset_versions.id"],
            name=op.f("fk_model_version_inputs_dataset_version_id_dataset_versions"),
            ondelete="RESTRICT",
        ),
        sa.ForeignKeyConstraint(
            ["input_model_version_id"],
            ["model_versions.id"],
            name=op.f("fk_model_version_inputs_input_model_version_id_model_versions"),
            ondelete="RESTRICT",
        ),
        sa.ForeignKeyConstraint(
            ["model_version_id"],
            ["model_versions.id"],
            name=op.f("fk_model_version_inputs_model_version_id_model_versions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_version_inputs")),
    )
    with op.batch_alter_table("model_version_inputs", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_model_version_inputs_dataset_version_id"),
            ["dataset_version_id"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_model_version_inputs_input_model_version_id"),
            ["input_model_version_id"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_model_version_inputs_model_version_id"),
            ["model_version_id"],
            unique=False,
        )

    with op.batch_alter_table("data_caches", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("size_bytes", sa.BigInteger(), nullable=False, server_default="0")
        )
        batch_op.add_column(
            sa.Column("file_count", sa.Integer(), nullable=False, server_default="0")
        )

    with op.batch_alter_table("model_versions", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("description", sa.String(length=256), nullable=False, server_default="")
        )

    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("max_nodes", sa.Integer(), nullable=False, server_default="64")
        )

    with op.batch_alter_table("training_tasks", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("container_user", sa.String(length=32), nullable=False, server_default="")
        )


def downgrade() -> None:
    with op.batch_alter_table("training_tasks", schema=None) as batch_op:
        batch_op.drop_column("container_user")

    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.drop_column("max_nodes")

    with op.batch_alter_table("model_versions", schema=None) as batch_op:
        batch_op.drop_column("description")

    with op.batch_alter_table("data_caches", schema=None) as batch_op:
        batch_op.drop_column("file_count")
        batch_op.drop_column("size_bytes")

    with op.batch_alter_table("model_version_inputs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_model_version_inputs_model_version_id"))
        batch_op.drop_index(batch_op.f("ix_model_version_inputs_input_model_version_id"))
        batch_op.drop_index(batch_op.f("ix_model_version_inputs_dataset_version_id"))

    op.drop_table("model_version_inputs")
    op.drop_table("project_members")
