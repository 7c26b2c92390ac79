"""The schema at the newest revision, as SQLAlchemy Core tables for the stores' queries.

The revisions in migrations/versions/ create it by hand (a revision never imports this module: it must keep
making what it made when it was written); tests/db/test_migrations.py checks that the database they make is
exactly this one, on SQLite and PostgreSQL. Times are ISO 8601 UTC text with microseconds (as the records carry
them), which sorts by time on both databases. Columns are `user_name`, `group_name`: `user` and `group` are
reserved words in PostgreSQL. Only names access/names.py checks have a length (64); other text is `text`, so
PostgreSQL never refuses what SQLite and the in-memory store take.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

metadata = sa.MetaData()

TIME = sa.String(32)
NAME = sa.String(64)  # access/names.py: a user's or group's name
# A JSON document: jsonb on PostgreSQL, text on SQLite.
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
# An id given in insertion order: INTEGER PRIMARY KEY on SQLite (its rowid), bigint identity on PostgreSQL.
ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

users = sa.Table(
    "users", metadata,
    sa.Column("name", NAME, primary_key=True),
    sa.Column("created_at", TIME, nullable=False),
    sa.Column("revoked_at", TIME, nullable=True),
)

user_roles = sa.Table(
    "user_roles", metadata,
    sa.Column("user_name", NAME, sa.ForeignKey("users.name", ondelete="CASCADE"), primary_key=True),
    sa.Column("kb", sa.Text(), primary_key=True),
    sa.Column("role", sa.String(16), nullable=False),
)

user_groups = sa.Table(
    "user_groups", metadata,
    sa.Column("user_name", NAME, sa.ForeignKey("users.name", ondelete="CASCADE"), primary_key=True),
    sa.Column("group_name", NAME, primary_key=True),
)

tokens = sa.Table(
    "tokens", metadata,
    sa.Column("hash", sa.String(64), primary_key=True),  # sha256 hex of the token; the token itself is never kept
    sa.Column("user_name", NAME, sa.ForeignKey("users.name", ondelete="CASCADE"), nullable=False, index=True),
)

audit = sa.Table(
    "audit", metadata,
    sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
    sa.Column("at", TIME, nullable=False, index=True),
    sa.Column("user_name", sa.Text(), nullable=False),
    sa.Column("action", sa.Text(), nullable=False),
    sa.Column("kb", sa.Text(), nullable=False),
    sa.Column("target", sa.Text(), nullable=False),
    sa.Column("detail", JSON, nullable=False),
    sa.Index("ix_audit_user_name_id", "user_name", "id"),
    sa.Index("ix_audit_kb_id", "kb", "id"),
    sa.Index("ix_audit_action_id", "action", "id"),
)

# Chat sessions shared by the API's workers (a later change reads and writes them): a session's turns as JSON text.
chat_sessions = sa.Table(
    "chat_sessions", metadata,
    sa.Column("user_name", sa.Text(), primary_key=True),
    sa.Column("session_id", sa.Text(), primary_key=True),
    sa.Column("turns", sa.Text(), nullable=False),
    sa.Column("updated_at", TIME, nullable=False, index=True),
)

# Recorded chat turns and their ratings (rag_core/feedback/store.py): JSON lists as text.
turns = sa.Table(
    "turns", metadata,
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
    sa.Column("user_name", sa.Text(), nullable=False, server_default=""),  # who asked (revision 0005_turn_user)
    sa.UniqueConstraint("session_id", "turn_index", name="uq_turns_session_id_turn_index"),
    sa.Index("turns_trace", "trace_id"),
    sa.Index("turns_user", "user_name", "created_at"),
    sa.Index("turns_created", "created_at"),
    sa.Index("turns_rating", "rating", "created_at"),
    sqlite_autoincrement=True,
)

# Saved evaluation runs (rag_core/evaluation/runstore.py): one row per run, its whole document as JSON text (not
# jsonb, which would reorder its keys); the other columns are what lists show, so a list reads no document.
eval_runs = sa.Table(
    "eval_runs", metadata,
    sa.Column("id", sa.Text(), primary_key=True),  # <UTC time>-<set>, the folder name it would have had
    sa.Column("kind", sa.String(16), nullable=False),  # "retrieval" or "answers"
    sa.Column("set_name", sa.Text(), nullable=False),
    sa.Column("kb", sa.Text(), nullable=False, server_default=""),
    sa.Column("created_at", TIME, nullable=False),
    sa.Column("run", sa.Text(), nullable=False),
    sa.Index("ix_eval_runs_kind_created_at", "kind", "created_at"),
)

# Named test sets (rag_core/evaluation/testsets_sql.py), one row a set: its items and description as JSON. A name is
# one set in the whole database, as it is one file in the data folder; `kb` is the knowledge base it was made from.
test_sets = sa.Table(
    "test_sets", metadata,
    sa.Column("name", sa.Text(), primary_key=True),
    sa.Column("kb", sa.Text(), nullable=False, server_default=""),
    sa.Column("items", JSON, nullable=False),
    sa.Column("meta", JSON, nullable=False),
    sa.Column("saved_at", TIME, nullable=False),
)

# The records kept beside a knowledge base's index (rag_core/store/kept.py): its chunk edits ("edits") and document
# labels ("labels"), each the whole JSON document its file would hold, as text (not jsonb, which would reorder keys).
kept_records = sa.Table(
    "kept_records", metadata,
    sa.Column("collection", sa.Text(), primary_key=True),
    sa.Column("kind", sa.String(16), primary_key=True),
    sa.Column("document", sa.Text(), nullable=False),
    sa.Column("updated_at", TIME, nullable=False),
)
