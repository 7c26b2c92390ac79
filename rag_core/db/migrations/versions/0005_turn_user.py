"""Who asked each recorded chat turn: `turns.user_name` (the caller's name, "local" in the one-person setup,
`cli:<OS user>` from the command line, as the audit log names them; "" for turns recorded before this revision).

Revision 0005_turn_user.
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_turn_user"
down_revision = "0004_eval_runs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("turns", sa.Column("user_name", sa.Text(), nullable=False, server_default=""))
    op.create_index("turns_user", "turns", ["user_name", "created_at"])


def downgrade() -> None:
    op.drop_index("turns_user", "turns")
    with op.batch_alter_table("turns") as batch:  # SQLite drops a column by copying the table
        batch.drop_column("user_name")
