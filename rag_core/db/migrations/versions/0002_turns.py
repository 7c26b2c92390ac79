"""The recorded chat turns and their ratings (rag_core/feedback): the table the turns store kept in data/turns.db
before it moved onto this database layer, column for column.

Revision 0002_turns. A turns.db written before this revision already has the table (and no alembic_version): it is
kept as it is, its turns with it.
"""

import sqlalchemy as sa
from alembic import op

revision = "0002_turns"
down_revision = "0001_access"
branch_labels = None
depends_on = None

ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    if "turns" in sa.inspect(op.get_bind()).get_table_names():
        return  # data/turns.db of a release before this revision: the same table
    op.create_table(
        "turns",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("turn_index", sa.Integer(), nullable=False),
        sa.Column("trace_id", sa.Text(), nullable=False, server_default=""),
        sa.Column("created_at", sa.Text(), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("knowledge_bases", sa.Text(), nullable=False, server_default="[]"),
        sa.Column("lookups", sa.Text(), nullable=False, server_default="[]"),
        sa.Column("evidence_keys", sa.Text(), nullable=False, server_default="[]"),
        sa.Column("citations", sa.Text(), nullable=False, server_default="[]"),
        sa.Column("model", sa.Text(), nullable=False, server_default=""),
        sa.Column("mode", sa.Text(), nullable=False, server_default=""),
        sa.Column("seconds", sa.Float(), nullable=False, server_default="0"),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("rating", sa.Integer(), nullable=True),
        sa.Column("comment", sa.Text(), nullable=False, server_default=""),
        sa.Column("rated_at", sa.Text(), nullable=True),
        sa.UniqueConstraint("session_id", "turn_index", name="uq_turns_session_id_turn_index"),
        sqlite_autoincrement=True,  # ids never reused, as before
    )
    op.create_index("turns_trace", "turns", ["trace_id"])
    op.create_index("turns_created", "turns", ["created_at"])
    op.create_index("turns_rating", "turns", ["rating", "created_at"])


def downgrade() -> None:
    op.drop_table("turns")
