"""Users, their roles per knowledge base and access groups, their tokens' hashes, the audit log; chat sessions.

Revision 0001_access (the first). Written by hand, as every revision here: it creates what it says, on SQLite and
PostgreSQL alike, and never imports rag_core (the schema it made stays what it made).
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001_access"
down_revision = None
branch_labels = None
depends_on = None

TIME = sa.String(32)
NAME = sa.String(64)
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("name", NAME, primary_key=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("revoked_at", TIME, nullable=True),
    )
    op.create_table(
        "user_roles",
        sa.Column("user_name", NAME, sa.ForeignKey("users.name", ondelete="CASCADE"), primary_key=True),
        sa.Column("kb", sa.Text(), primary_key=True),
        sa.Column("role", sa.String(16), nullable=False),
    )
    op.create_table(
        "user_groups",
        sa.Column("user_name", NAME, sa.ForeignKey("users.name", ondelete="CASCADE"), primary_key=True),
        sa.Column("group_name", NAME, primary_key=True),
    )
    op.create_table(
        "tokens",
        sa.Column("hash", sa.String(64), primary_key=True),
        sa.Column("user_name", NAME, sa.ForeignKey("users.name", ondelete="CASCADE"), nullable=False),
    )
    op.create_index("ix_tokens_user_name", "tokens", ["user_name"])
    op.create_table(
        "audit",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("at", TIME, nullable=False),
        sa.Column("user_name", sa.Text(), nullable=False),
        sa.Column("action", sa.Text(), nullable=False),
        sa.Column("kb", sa.Text(), nullable=False),
        sa.Column("target", sa.Text(), nullable=False),
        sa.Column("detail", JSON, nullable=False),
    )
    op.create_index("ix_audit_at", "audit", ["at"])
    op.create_index("ix_audit_user_name_id", "audit", ["user_name", "id"])
    op.create_index("ix_audit_kb_id", "audit", ["kb", "id"])
    op.create_index("ix_audit_action_id", "audit", ["action", "id"])
    op.create_table(
        "chat_sessions",
        sa.Column("user_name", sa.Text(), primary_key=True),
        sa.Column("session_id", sa.Text(), primary_key=True),
        sa.Column("turns", sa.Text(), nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
    )
    op.create_index("ix_chat_sessions_updated_at", "chat_sessions", ["updated_at"])


def downgrade() -> None:
    for table in ("chat_sessions", "audit", "tokens", "user_groups", "user_roles", "users"):
        op.drop_table(table)
