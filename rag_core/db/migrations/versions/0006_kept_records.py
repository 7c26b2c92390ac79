"""The records kept beside an index (rag_core/store/kept.py): a knowledge base's chunk edits and document labels, one
row each, the whole JSON document as the file held it.

Revision 0006_kept_records. Files in a data folder are taken into their row the first time it is read.
"""

import sqlalchemy as sa
from alembic import op

revision = "0006_kept_records"
down_revision = "0005_turn_user"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "kept_records",
        sa.Column("collection", sa.Text(), primary_key=True),
        sa.Column("kind", sa.String(16), primary_key=True),
        sa.Column("document", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.String(32), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("kept_records")
