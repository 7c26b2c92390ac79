"""Named test sets (rag_core/evaluation/testsets_sql.py): one row a set, its items and description as JSON.

Revision 0003_test_sets. Sets saved as files in the data folder stay there (the embedded default keeps using them).
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0003_test_sets"
down_revision = "0002_turns"
branch_labels = None
depends_on = None

TIME = sa.String(32)
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "test_sets",
        sa.Column("name", sa.Text(), primary_key=True),
        sa.Column("kb", sa.Text(), nullable=False, server_default=""),
        sa.Column("items", JSON, nullable=False),
        sa.Column("meta", JSON, nullable=False),
        sa.Column("saved_at", TIME, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("test_sets")
