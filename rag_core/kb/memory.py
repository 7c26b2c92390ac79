"""The catalog of knowledge bases in memory: the fake that passes the same contract as MilvusCatalog
(tests/contracts/catalog.py), for fast tests of what sits above it. Same write protocol (insert the new
entry, then retire the older ones of its name); thread-safe; nothing survives the process."""

from __future__ import annotations

import itertools
import threading

from ..records import KnowledgeBase
from .catalog import active, newest, stamped, unfinished_of


class InMemoryCatalog:
    def __init__(self) -> None:
        self._rows: list[tuple[str, KnowledgeBase]] = []
        self._keys = itertools.count()
        self._lock = threading.Lock()

    def _entries(self) -> dict[str, KnowledgeBase]:
        with self._lock:
            return newest(list(self._rows))

    def list_knowledge_bases(self) -> list[KnowledgeBase]:
        return active(self._entries())

    def get(self, name: str) -> KnowledgeBase | None:
        return next((kb for kb in active(self._entries()) if kb.name == name), None)

    def unfinished(self) -> list[KnowledgeBase]:
        return unfinished_of(self._entries())

    def write(self, kb: KnowledgeBase) -> KnowledgeBase:
        with self._lock:
            old = [row for row in self._rows if row[1].name == kb.name]
            kb = stamped(kb, (e for _, e in old))
            self._rows.append((f"{next(self._keys):016d}", kb))
            self._rows = [row for row in self._rows if row not in old]
        return kb

    def forget(self, name: str) -> None:
        with self._lock:
            self._rows = [row for row in self._rows if row[1].name != name]

    def close(self) -> None:
        pass
