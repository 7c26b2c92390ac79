"""Who may do what: users with their own tokens, a role per knowledge base, access groups, the audit log.

records.py holds what crosses module boundaries (Role, Principal, User, AuditEvent, AccessScope); the store
behind them is a `ports.AccessStore` (an SQL database: an embedded SQLite file or PostgreSQL by `database.url`).
"""
