"""The TestSetStore in SQL (rag_core/db): named test sets in the shared-state database when database.url is set.

One row a set (table `test_sets`): its items as a JSON list of the lines a set's file holds, its description as
JSON, the knowledge base it was made from and when it was saved. A save writes the whole row in one statement (an
upsert), so a reader sees the old set or the new one, never a mix, and two processes saving one name at once leave
one of the two sets. It behaves as the folder store does, message for message (tests/contracts/test_sets.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from ..db.engine import is_postgresql
from ..db.store import SqlStore
from ..db.tables import test_sets
from ..errors import EvaluationError
from .testsets import TestItem, TestSet, TestSetInfo, check_name, set_info, unknown_set

ITEMS = test_sets.c["items"]  # not `.c.items`: that is the collection's own method


class SqlTestSets(SqlStore):
    def list_sets(self) -> list[TestSetInfo]:
        query = sa.select(test_sets.c.name, ITEMS, test_sets.c.saved_at).order_by(test_sets.c.name)
        with self._reading() as conn:
            rows = conn.execute(query).all()
        found = []
        for name, value, saved_at in rows:
            try:
                items = _items(name, value)
            except EvaluationError:
                continue  # as a damaged file is: left out of the list, loading it by name says why
            found.append(set_info(name, items, saved_at))
        return found

    def load(self, name: str) -> TestSet:
        name = check_name(name)
        with self._reading() as conn:
            row = conn.execute(sa.select(ITEMS, test_sets.c.meta).where(test_sets.c.name == name)).first()
        if row is None:
            raise unknown_set(name, (s.name for s in self.list_sets()))
        meta = _json(row[1])
        return TestSet(name, _items(name, row[0]), meta if isinstance(meta, dict) else {})

    def save(self, name: str, items: Sequence[TestItem], meta: Mapping[str, Any] | None = None) -> str:
        name = check_name(name)
        if not items:
            raise EvaluationError(f"Nothing to save as test set {name!r}: it has no items.")
        row: dict[str, Any] = {"name": name, "items": [i.to_dict() for i in items],
                               "saved_at": datetime.now(UTC).isoformat(timespec="microseconds")}
        kept = ["items", "saved_at"]
        if meta is not None:  # None keeps the description (and the knowledge base) the set has
            row |= {"meta": dict(meta), "kb": str(meta.get("knowledge_base") or "")}
            kept += ["meta", "kb"]
        dialect = postgresql if is_postgresql(self._engine) else sqlite
        new = dialect.insert(test_sets).values(**{"meta": {}, "kb": "", **row})
        upsert = new.on_conflict_do_update(index_elements=[test_sets.c.name],
                                           set_={column: new.excluded[column] for column in kept})
        with self._writing() as conn:
            conn.execute(upsert)
        return f"test set {name} in {self.where}"



def _json(value: Any) -> Any:
    """A JSON column's value (SQLite may hand back the text)."""
    return json.loads(value) if isinstance(value, str) else value


def _items(name: str, value: Any) -> tuple[TestItem, ...]:
    """The items of a row, checked as a file's lines are (a row written by hand, or by an older release)."""
    rows = _json(value)
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise EvaluationError(f"Test set {name!r} in the database is damaged: its items are not a list of objects.")
    items = tuple(TestItem.from_row(r, f"test set {name!r}, item {n}", f"q{n}") for n, r in enumerate(rows, 1))
    if len({i.id for i in items}) < len(items):
        raise EvaluationError(f"Test set {name!r}: an item id appears twice.")
    return items
