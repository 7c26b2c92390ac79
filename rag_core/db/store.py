"""What every store on the shared-state database starts from: its engine, the schema brought to the newest revision
when it opens, where it is (for messages, without credentials), and connections that turn "cannot reach the
database" into one line (engine.reaching)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.engine import Connection, Engine

from .engine import reaching, where, writing
from .migrate import upgrade


class SqlStore:
    def __init__(self, engine: Engine) -> None:
        """Opens the store on `engine`, first bringing its database to the newest revision (db/migrate.py)."""
        self._engine = engine
        upgrade(engine)

    @property
    def where(self) -> str:
        return where(self._engine)

    def close(self) -> None:
        self._engine.dispose()

    @contextmanager
    def _reading(self) -> Iterator[Connection]:
        with reaching(self._engine), self._engine.connect() as conn:
            yield conn

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        """One transaction (committed when the block ends without an error)."""
        with reaching(self._engine), writing(self._engine) as conn:
            yield conn
