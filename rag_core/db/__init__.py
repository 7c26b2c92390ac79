"""The shared state in SQL: users, roles, groups, the audit log (rag_core/access/sql.py) and, later, chat sessions,
in one database: an embedded SQLite file in the data folder by default, PostgreSQL when `database.url` is set.

url.py says which database and how to name it without its password; engine.py opens it (SQLite's WAL and busy
timeout, PostgreSQL's pre-ping) and turns "cannot reach it" into one line; migrate.py brings its schema to the
newest Alembic revision (migrations/versions/, hand-written) when a store opens; tables.py is that schema, for
the stores' queries.
"""
