"""Which database holds the shared state, and its name as messages may show it."""

from __future__ import annotations

from collections.abc import Mapping

from ..config import Settings, redact_uri
from ..errors import StoreError

FILE_NAME = "team.db"  # the embedded database in the data folder when database.url is empty
ENV = "RAG_DATABASE_URL"
SCHEMES = {"sqlite": "sqlite", "postgresql": "postgresql+psycopg", "postgres": "postgresql+psycopg",
           "postgresql+psycopg": "postgresql+psycopg"}


def database_url(settings: Settings, env: Mapping[str, str] | None = None) -> str:
    """`database.url` (which RAG_DATABASE_URL sets when the settings are loaded), else RAG_DATABASE_URL of `env`
    when given, else `sqlite:///<data_dir>/team.db`."""
    url = str(settings["database.url"] or "").strip() or (env or {}).get(ENV, "").strip()
    return url or f"sqlite:///{(settings.data_dir / FILE_NAME).resolve().as_posix()}"


def sqlalchemy_url(url: str) -> str:
    """The URL with the driver SQLAlchemy is to use (psycopg 3 for PostgreSQL); StoreError for any other database."""
    scheme, sep, rest = url.partition("://")
    driver = SCHEMES.get(scheme.lower()) if sep else None
    if driver is None:
        raise StoreError(f"The database {redact_uri(url)!r} is neither PostgreSQL (postgresql://user:password@host/db) "
                         "nor SQLite (sqlite:///path): set database.url to a postgresql:// URL, or leave it empty for "
                         "the data folder's SQLite file.")
    return f"{driver}://{rest}"


def shown(url: str) -> str:
    """The database as messages and logs show it: no password, no secret query parameter."""
    return redact_uri(url)
