"""Several knowledge bases of one database open at once: the HTTP service's routes (`/v1/kbs/{name}/...`) and
the agent that searches several knowledge bases. Each is opened on first use and kept open; those that use
the same embedder share the loaded model."""

from __future__ import annotations

import threading
from typing import Any

from ..config import Settings
from ..ports import Embedder
from ..workbench import Factories, Workbench
from .manage import KnowledgeBases
from .settings import EMBEDDER_KEYS


def embedder_key(settings: Settings) -> tuple[Any, ...]:
    return tuple(settings[k] for k in (*EMBEDDER_KEYS, "embedding.base-url", "embedding.api-key-env"))


class OpenKnowledgeBases:
    """`first`: an open workbench (the default knowledge base, usually), kept as is and closed by `close_all`
    only when `own_first`. `factories`: how the others are opened (entry points get this object from
    `bootstrap.open_knowledge_bases`). `settings`: the process's settings (the values new knowledge bases get)."""

    def __init__(self, first: Workbench, factories: Factories, settings: Settings | None = None, *,
                 own_first: bool = True) -> None:
        self.settings = (settings or first.settings).for_kb(None)
        self.factories = factories
        self.first = first
        self.default = first.settings.kb_name
        self._own_first = own_first
        self._open: dict[str, Workbench] = {self.default: first}
        self._embedders: dict[tuple[Any, ...], Embedder] = {embedder_key(first.settings): first.embedder}
        self._manager: KnowledgeBases | None = None
        self._lock = threading.RLock()
        self._status_seen: dict[str, int] = {}  # knowledge base -> its upgrade status file's mtime when last read

    def _embedder(self, settings: Settings) -> Embedder:
        key = embedder_key(settings)
        with self._lock:
            if key not in self._embedders:
                self._embedders[key] = self.factories.build_embedder(settings)
            return self._embedders[key]

    @property
    def manager(self) -> KnowledgeBases:
        """The catalog operations (create, copy, delete, ...) on this database, opened on first use."""
        with self._lock:
            if self._manager is None:
                self._manager = KnowledgeBases(self.settings, self.factories, load_embedder=self._embedder,
                                               held_open=[self.default])  # `first` stays open as it is
            return self._manager

    def get(self, name: str | None) -> Workbench:
        """The open workbench of knowledge base `name` (None or "": the default one); opened again when an embedder
        upgrade (kb.upgrade, another process) swapped its vectors since: the collection it searched is gone."""
        name = name or self.default
        stale = None
        with self._lock:
            wb = self._open.get(name)
            if wb is not None and wb is self.first and self._upgraded(name, wb):
                return self.reopen_first()
            if wb is not None and self._upgraded(name, wb):
                stale, wb = self._open.pop(name), None
            if wb is None:
                wb = self._open[name] = self.manager.open(name)
        if stale is not None:
            stale.close()
        return wb

    def first_upgraded(self) -> bool:
        """Whether an embedder upgrade swapped the first knowledge base's vectors since it was opened (a stat, and
        a read of the status file when that changed): `reopen_first` then."""
        with self._lock:
            return self._upgraded(self.default, self.first)

    def reopen_first(self) -> Workbench:
        """The first knowledge base opened again (its upgrade swapped its vectors: the collection it searched is
        gone). The one it replaces is closed when this object owned it; the new one is this object's to close."""
        with self._lock:
            old = self.first
            self.first = self._open[self.default] = self.manager.open(self.default)
            owned, self._own_first = self._own_first, True
        if owned:
            old.close()
        return self.first

    def _upgraded(self, name: str, wb: Workbench) -> bool:
        """Whether `name`'s upgrade finished with another embedder than `wb`'s, or a BM25 re-index finished (both swap
        its chunk collection); the status file is read only when it changed (a stat per call)."""
        from .upgrade import FINISHED, read_status, status_path

        try:
            changed = status_path(self.settings, name).stat().st_mtime_ns
        except OSError:
            return False
        if self._status_seen.get(name) == changed:
            return False
        self._status_seen[name] = changed
        status = read_status(self.settings, name)
        return status is not None and status.state == FINISHED and (
            status.kind == "bm25" or status.to != wb.settings["embedding.provider"])  # a BM25 re-index swaps too

    def forget(self, name: str) -> None:
        """Close a knowledge base's workbench (before it is deleted, or after its settings changed)."""
        with self._lock:
            wb = self._open.pop(name, None)
        if wb is not None and (wb is not self.first or self._own_first):
            wb.close()

    def close_all(self) -> None:
        with self._lock:
            names = list(self._open)
        for name in names:
            self.forget(name)
        with self._lock:
            if self._manager is not None:
                self._manager.close()
                self._manager = None
