"""runs (task_id, id) and dataset_versions (dataset_id, id): indexes for paged lists

A page of a task's runs, newest first, and of a dataset's versions in the order they were
made, read with ``LIMIT``/``OFFSET`` (``octotrain.catalog.paging``): without these the database
sorted every run of the task (20,000 in ``bench.lists``) for each page.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06 11:10:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_runs_task_id_id", "runs", ["task_id", "id"])
    op.create_index("ix_dataset_versions_dataset_id_id", "dataset_versions", ["dataset_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_dataset_versions_dataset_id_id", table_name="dataset_versions")
    op.drop_index("ix_runs_task_id_id", table_name="runs")
