"""Saved evaluation runs (rag_core/evaluation/runstore.py), in the shared database when database.url is set: one row
per run, its document as JSON text.

Revision 0004_eval_runs.
"""

import sqlalchemy as sa
from alembic import op

revision = "0004_eval_runs"
down_revision = "0003_test_sets"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "eval_runs",
        sa.Column("id", sa.Text(), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("set_name", sa.Text(), nullable=False),
        sa.Column("kb", sa.Text(), nullable=False, server_default=""),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("run", sa.Text(), nullable=False),
    )
    op.create_index("ix_eval_runs_kind_created_at", "eval_runs", ["kind", "created_at"])


def downgrade() -> None:
    op.drop_table("eval_runs")
