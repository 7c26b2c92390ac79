"""Knowledge bases as objects: list, show, create, change, copy and delete them. The one implementation
behind `python -m rag_core kb ...`, the knowledge base page and `/v1/kbs`.

Every operation is written to the catalog so that a failure or a killed process leaves either the old state
or the new one, and what it left half-done is finished (or undone) the next time the catalog is opened here:

- create: one catalog entry (the commit), then the first open creates the collections;
- copy: an entry in state `creating` (not listed, so nobody uses a half-filled copy), the new collections
  filled from the source's kept originals (re-chunked, re-embedded with the new settings), then the
  `active` entry (the commit). A copy that fails is undone at once; one whose process was killed is undone
  by the next recovery that can tell its writer is gone;
- delete: a `deleted` entry (the commit: the knowledge base is gone for everyone), then its collections and
  kept originals are removed, then its entries. Recovery finishes an interrupted delete. A delete never drops a
  collection whose name differs only by letter case from another knowledge base's or collection's: Milvus Lite
  keeps those in one table (names), so such a knowledge base leaves the catalog but its storage stays.
"""

from __future__ import annotations

import builtins  # `list` below is the method that lists knowledge bases
import logging
import shutil
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..config import Settings, originals_dirs
from ..errors import KnowledgeBaseError, RagError
from ..files import FileLock
from ..names import CATALOG, collections_of, fold
from ..ports import Embedder, KnowledgeBaseCatalog
from ..records import IngestReport, KnowledgeBase
from ..store.milvus.rows import utc_now
from ..workbench import Factories, Workbench
from .resolve import case_clash, check_name, database_of, not_found, resolve
from .settings import (
    EMBEDDER_KEYS,
    apply,
    by_hand,
    checked,
    describe,
    joined,
    origins_of,
    per_command,
    with_measured_expand,
    with_measured_fusion,
)

log = logging.getLogger(__name__)

ABANDONED_AFTER_S = 6 * 3600  # a copy whose writer cannot be checked (another process) this old is dead
# Copies running in this process (database, name): recovery never undoes them.
_running: set[tuple[str, str]] = set()
_running_guard = threading.Lock()


@dataclass(frozen=True)
class KnowledgeBaseInfo:
    """A knowledge base with what it holds (read without loading its embedder)."""

    kb: KnowledgeBase
    default: bool  # the default knowledge base (milvus.collection): cannot be deleted
    documents: int = 0
    chunks: int = 0
    without_original: int = 0  # documents `reindex` / `kb copy` cannot rebuild
    embedder: str = ""  # as recorded with its collection ("" before its first open)
    dim: int = 0
    error: str = ""  # why its contents could not be read
    dictionary: tuple[str, ...] = ()  # its BM25 dictionary and stop words (rag_core.dictionary), from its collection
    stop_words: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.kb.name, "default": self.default, "settings": dict(self.kb.settings),
                "created_at": self.kb.created_at, "note": self.kb.note, "documents": self.documents,
                "chunks": self.chunks, "without_original": self.without_original, "embedder": self.embedder,
                "dim": self.dim, "summary": describe(self.kb), "error": self.error,
                "dictionary": list(self.dictionary), "stop_words": list(self.stop_words),
                "origins": {key: origin.to_dict() for key, origin in origins_of(self.kb).items()},
                "tuning": dict(self.kb.provenance.get("tuning") or {})}


@dataclass(frozen=True)
class CopyResult:
    kb: KnowledgeBase
    reports: list[IngestReport]

    @property
    def failed(self) -> list[IngestReport]:
        return [r for r in self.reports if r.status == "failed"]

    def to_dict(self) -> dict[str, Any]:
        return {"knowledge_base": self.kb.name, "settings": dict(self.kb.settings),
                "reports": [r.to_dict() for r in self.reports],
                "counts": {s: sum(r.status == s for r in self.reports) for s in ("added", "failed")}}


class KnowledgeBases:
    """The knowledge bases of the database `settings` name. `settings` (rag.toml, environment, flags) give the
    values of knowledge bases created here. `factories`: how stores, catalogs and workbenches are opened (entry
    points get this object from `bootstrap.knowledge_bases`). `catalog`: an open one to use (default: opened
    here, closed by `close`). `load_embedder(settings)`: how to get the embedder a knowledge base's settings name
    (default: built once per embedder by `factories`; the app passes its cached models). `held_open`: knowledge
    bases this process keeps open with their embedder loaded (the service's default one): their embedder cannot
    change here.

    The default knowledge base exists once this is made: when missing it is made by opening it, as `create`
    does (its embedder is built, its collections made), so settings that cannot work are not recorded. `made`
    is it when made here; a `with` block that fails undoes it (`discard_made`)."""

    def __init__(self, settings: Settings, factories: Factories, *,
                 catalog: KnowledgeBaseCatalog | None = None,
                 load_embedder: Callable[[Settings], Embedder] | None = None,
                 held_open: Collection[str] = ()) -> None:
        self.settings = settings.for_kb(None)
        self.default = settings["milvus.collection"]
        self.factories = factories
        self._own_catalog = catalog is None
        self.catalog = catalog if catalog is not None else factories.open_catalog(settings)
        # None: a catalog without a database (kb.memory, in tests): nothing is stored, so nothing is opened or dropped
        self.database = database_of(self.catalog)
        self._load_embedder = load_embedder
        self._embedders: dict[tuple[Any, ...], Embedder] = {}
        self._held_open = frozenset(held_open)
        # A name is checked and written under this lock in every process of the data folder, so two processes
        # making names that differ only by case at the same moment never both succeed (names).
        self.names_lock = FileLock(settings.data_dir / ".kb-names.lock")
        self.made: KnowledgeBase | None = None
        try:
            self.recover()
            self.made = self._make_default()
        except BaseException:
            self.close()
            raise

    def _make_default(self) -> KnowledgeBase | None:
        """The default knowledge base made now (None when it exists): written once it has opened."""
        kb = resolve(self.catalog, self.settings, record=False)
        if kb.committed_ns:
            return None
        if self.database is None:
            return self.catalog.write(kb)  # a catalog without a database (tests): nothing to open
        wb = self.open(kb.name, kb)
        wb.close()
        return wb.kb

    def close(self) -> None:
        if self._own_catalog:
            self.catalog.close()

    def __enter__(self) -> KnowledgeBases:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        try:
            if kind is not None and self.made is not None:
                self._discard_quietly(self.made)
        finally:
            self.close()

    def _discard_quietly(self, kb: KnowledgeBase) -> None:
        try:
            self.discard_made(kb)
        except Exception:  # noqa: BLE001 - never hides the failure being handled
            log.warning("could not undo knowledge base %s made by a command that failed", kb.name, exc_info=True)

    def discard_made(self, kb: KnowledgeBase) -> bool:
        """Undo knowledge base `kb`, made by a command that then failed (the default one, made on first use), so
        the failure leaves no settings behind: removed when its entry is still the one written then and it holds
        no documents. Returns whether it was removed."""
        current = self.catalog.get(kb.name)
        if current is None or current.committed_ns != kb.committed_ns:
            return False  # changed since (`kb set`, another process): no longer only this command's
        info = self.info(kb.name)
        if info.error or info.documents:
            return False
        self._remove(current)
        if self.made is not None and self.made.name == kb.name:
            self.made = None
        return True

    # ---------------------------------------------------------------- reading
    def list(self) -> list[KnowledgeBase]:
        return self.catalog.list_knowledge_bases()

    def names(self) -> builtins.list[str]:
        return [kb.name for kb in self.list()]

    def get(self, name: str) -> KnowledgeBase:
        kb = self.catalog.get(check_name(name))
        if kb is None:
            raise not_found(self.catalog, name)
        return kb

    def info(self, name: str) -> KnowledgeBaseInfo:
        """What a knowledge base holds, read from its registry (no embedder is loaded)."""
        kb = self.get(name)
        info = KnowledgeBaseInfo(kb, kb.name == self.default)
        chunks = str(kb.settings.get("milvus.chunks") or kb.name)
        if self.database is not None and not self.database.has_collection(chunks):
            return info  # made, never opened yet: its collections are created on first use
        try:
            store = self.factories.open_source_store(apply(self.settings, kb), kb.name)
        except RagError as exc:
            return replace(info, error=str(exc))
        try:
            docs = store.list_documents()
            meta = self.database.collection_meta(chunks) if self.database is not None else {}
        finally:
            store.close()
        return replace(info, documents=len(docs), chunks=sum(d.chunks for d in docs),
                       without_original=sum(not d.has_original for d in docs), embedder=str(meta.get("embedder", "")),
                       dim=int(meta.get("dim") or 0), dictionary=tuple(meta.get("dictionary") or ()),
                       stop_words=tuple(meta.get("stop_words") or ()))

    # ---------------------------------------------------------------- opening
    def embedder(self, settings: Settings) -> Embedder:
        """The embedder for a knowledge base's settings, loaded once per embedder by this object."""
        if self._load_embedder is not None:
            return self._load_embedder(settings)
        key = tuple(settings[k] for k in (*EMBEDDER_KEYS, "embedding.base-url", "embedding.api-key-env"))
        if key not in self._embedders:
            self._embedders[key] = self.factories.build_embedder(settings)
        return self._embedders[key]

    def open(self, name: str, kb: KnowledgeBase | None = None) -> Workbench:
        """A workbench on knowledge base `name` (close it after use)."""
        kb = kb or self.get(name)
        return self.factories.build_workbench(self.settings.for_kb(kb.name), self.embedder(apply(self.settings, kb)),
                                              kb=kb)

    # ---------------------------------------------------------------- changing
    def _check_free(self, name: str) -> None:
        """`name` can name a new knowledge base: no knowledge base or collection has it, in any letter case."""
        check_name(name)
        if self.catalog.get(name) is not None:
            raise KnowledgeBaseError(f"A knowledge base named {name!r} exists already; choose another name "
                                     "(`kb list` shows them).", "exists")
        if any(kb.name == name for kb in self.catalog.unfinished()):
            raise KnowledgeBaseError(f"Knowledge base {name!r} is being created or deleted right now; choose "
                                     "another name or try again when that is done.", "exists")
        if problem := case_clash(self.catalog, name):
            raise KnowledgeBaseError(problem[0].upper() + problem[1:], "exists")
        database = self.database
        taken = [c for c in collections_of(name) if database is not None and database.has_collection(c)]
        if taken:
            raise KnowledgeBaseError(f"The database already has a collection named {taken[0]!r} that is not a "
                                     f"knowledge base; choose another name than {name!r}.", "exists")

    def create(self, name: str, changes: Mapping[str, Any] | None = None, note: str = "") -> KnowledgeBase:
        """A new, empty knowledge base with the configured settings and `changes` (KB_KEYS -> value)."""
        values = checked(self.settings, changes or {}, f"knowledge base {name}")
        values, measured = with_measured_fusion(values, set(changes or {}) | self.settings.explicit)
        values, expand = with_measured_expand(values, set(changes or {}) | self.settings.explicit)
        measured = joined(measured, expand)
        with self.names_lock():
            self._check_free(name)
            now = utc_now()
            kb = self.catalog.write(KnowledgeBase(name, values, created_at=now,
                                                  note=joined(note or "created empty", measured),
                                                  provenance=by_hand({}, values, changes or {}, now)))
        try:  # opening it creates its collections and checks its embedder can be built
            self.open(name, kb).close()
        except BaseException:
            self._remove(kb)
            raise
        return kb

    def update(self, name: str, changes: Mapping[str, Any],
               provenance: Callable[[KnowledgeBase, Mapping[str, Any]], Mapping[str, Any]] | None = None
               ) -> KnowledgeBase:
        """Change a knowledge base's chunking or search defaults. Documents keep their chunks until re-indexed
        (`reindex`). The embedder changes only while it holds no documents (its collections, empty, are made
        again for the new one on next open); once it has vectors, `copy` re-embeds them into a new one.
        The settings in `changes` are recorded as set by hand (kb.settings.origin_of), unless `provenance` (the
        entry as it was, and its new values -> its new provenance: `eval tune --apply` and `--revert`) says."""
        kb = self.get(name)
        if "milvus.chunks" in changes:
            raise KnowledgeBaseError("milvus.chunks is set by `kb upgrade` when it swaps in a new embedder's "
                                     "vectors, never by hand.", "bad_settings")
        values = checked(apply(self.settings, kb), changes, f"knowledge base {name}")
        changed = [k for k in EMBEDDER_KEYS if values[k] != kb.settings.get(k, values[k])]
        note = kb.note
        if changed:
            self._check_embedder_may_change(kb, changed)
            self._drop_storage(kb.name, originals=False)  # empty, and made for the old embedder
            values, measured = self.measured_for_new_embedder(kb, values, changes)
            note = joined(note, measured)
        kept = (provenance(kb, values) if provenance is not None
                else by_hand(kb.provenance, values, [k for k in changes if k in values], utc_now()))
        return self.catalog.write(replace(kb, settings=values, note=note, provenance=kept))

    def measured_for_new_embedder(self, before: KnowledgeBase, values: dict[str, Any],
                                   changes: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
        """A knowledge base given another embedder gets the fusion settings measured for it, unless this command
        gave them (its options, --set, the environment)."""
        if values["embedding.provider"] == before.settings.get("embedding.provider"):
            return values, ""
        return with_measured_fusion(values, set(changes) | per_command(self.settings))

    def _check_embedder_may_change(self, kb: KnowledgeBase, changed: builtins.list[str]) -> None:
        what = f"The embedder of knowledge base {kb.name!r} cannot change ({', '.join(changed)})"
        if kb.name in self._held_open:
            raise KnowledgeBaseError(f"{what} while this process has it open with its embedder loaded (the "
                                     f"service's default knowledge base); stop the service and run `python -m "
                                     f"rag_core kb set {kb.name} ...`.", "bad_settings")
        if self.database is None:
            return  # a catalog without a database (tests): nothing stored
        info = self.info(kb.name)
        if info.error:
            raise KnowledgeBaseError(f"{what}: whether it holds documents cannot be read ({info.error}).",
                                     "bad_settings")
        if info.documents:
            raise KnowledgeBaseError(f"{what}: the vectors of its {info.documents} documents were made by it. Copy it "
                                     "into a new knowledge base with the new embedder instead: `python -m rag_core "
                                     f"kb copy {kb.name} NEW --embedder ...`.", "bad_settings")

    def delete(self, name: str) -> str:
        """Remove a knowledge base: its catalog entry (at once, for every process), then its collections and
        kept originals. The default knowledge base cannot be deleted. Returns a note when some of its storage
        was kept because another knowledge base or collection shares it (names that differ only by case), else
        ""."""
        kb = self.get(name)
        if kb.name == self.default:
            raise KnowledgeBaseError(f"{name!r} is the default knowledge base (milvus.collection) and cannot be "
                                     "deleted; delete its documents instead, or make another one the default.",
                                     "refused")
        others = self._others(kb.name)
        kept = self._remove(kb)
        if not kept:
            return ""
        sharing = sorted({o for o in others if fold(o) == fold(kb.name)})
        with_whom = (f"knowledge base {sharing[0]!r}'s" if sharing else "those of collections whose names differ "
                     "from them only by case")
        return (f"{kb.name!r} is no longer a knowledge base, but its collections {', '.join(kept)} were kept: "
                f"Milvus Lite stores them in the same tables as {with_whom} (names that differ only by case), so "
                "dropping them would empty those too. What it held stays in that storage"
                + (f" and shows in {sharing[0]!r}." if sharing else "."))

    def copy(self, source: str, name: str, changes: Mapping[str, Any] | None = None,
             progress: Callable[[Any], None] = lambda _: None) -> CopyResult:
        """A new knowledge base `name` with `source`'s settings and `changes`, holding every document of
        `source` re-chunked and re-embedded from its kept originals (`progress` gets the ingest's events).
        Documents without a kept original are reported failed; `source` is left as it was."""
        src = self.get(source)
        check_name(name)
        values, measured = self.measured_for_new_embedder(
            src, checked(apply(self.settings, src), changes or {}, f"knowledge base {name}"), changes or {})
        values["milvus.chunks"] = ""  # its own collection (the source's may be an upgrade's)
        key = (self.settings.milvus_uri, name)
        with _running_guard:
            _running.add(key)
        try:
            with self.names_lock():
                self._check_free(name)
                now = utc_now()  # the copy keeps where the source's values came from; its own options are by hand
                kept = {"origins": dict(src.provenance.get("origins") or {})} if src.provenance.get("origins") else {}
                pending = self.catalog.write(KnowledgeBase(name, values, "creating", now,
                                                           note=joined(f"copy of {source}", measured),
                                                           provenance=by_hand(kept, values, changes or {}, now)))
            try:
                wb = self.open(name, pending)
                try:
                    source_store = self.factories.open_source_store(apply(self.settings, src), source)
                    try:
                        reports = wb.ingestor.reindex(source=source_store, progress=progress)
                    finally:
                        source_store.close()
                finally:
                    wb.close()
                kb = self.catalog.write(replace(pending, state="active"))  # the commit
            except BaseException:
                self._remove(pending)
                raise
        finally:
            with _running_guard:
                _running.discard(key)
        return CopyResult(kb, reports)

    def adopt(self) -> builtins.list[str]:
        """Collections made before knowledge bases that the catalog does not list yet, made knowledge bases."""
        from .resolve import adopt_collections

        return adopt_collections(self.database, self.settings) if self.database is not None else []

    # ---------------------------------------------------------------- recovery
    def _remove(self, kb: KnowledgeBase) -> builtins.list[str]:
        """Tombstone, storage, entries: each step can be repeated, so an interrupted removal is finished later.
        Returns the collections kept (see `_drop_storage`)."""
        if kb.state != "deleted":
            kb = self.catalog.write(replace(kb, state="deleted"))
        kept = self._drop_storage(kb.name)
        self.catalog.forget(kb.name)
        return kept

    def _others(self, name: str) -> builtins.list[str]:
        """The names of every other knowledge base in the catalog, being made or deleted included."""
        return [kb.name for kb in (*self.catalog.list_knowledge_bases(), *self.catalog.unfinished())
                if kb.name != name]

    def _drop_storage(self, name: str, *, originals: bool = True) -> builtins.list[str]:
        """Drop knowledge base `name`'s collections and (`originals`) its kept originals, checked against the
        catalog first: a collection whose name, compared without case, is one of another knowledge base's
        (or the catalog's) is kept, whatever the store's rules, and so are kept originals whose folder is
        another knowledge base's too (a case-insensitive file system). The store also keeps any collection that
        the database has in other letter case (MilvusStore.drop). Returns the collections kept."""
        from ..store.originals.files import shared_with_variant

        if self.database is None:
            return []  # a catalog without a database (tests): nothing stored
        others = self._others(name)
        theirs = {fold(c) for other in others for c in collections_of(other)} | {fold(CATALOG)}
        spare = [c for c in collections_of(name) if fold(c) in theirs]
        folders = originals_dirs(self.settings, name)
        store = self.factories.connect_store(self.settings, name)
        try:
            kept = store.drop(spare, originals=originals and not shared_with_variant(folders["originals"], others))
        finally:
            store.close()
        if originals and not shared_with_variant(folders["legacy_originals"], others):
            shutil.rmtree(folders["legacy_originals"], ignore_errors=True)
        return kept

    def _exclusive(self) -> bool:
        """Whether no other process can be changing this database (then every unfinished copy is abandoned)."""
        return self.factories.connect_store(self.settings, self.default).exclusive_access()  # never connects

    def recover(self) -> builtins.list[str]:
        """Finish interrupted deletes and undo abandoned copies; returns their names."""
        now, exclusive, done = time.time_ns(), None, []
        for kb in self.catalog.unfinished():
            with _running_guard:
                if (self.settings.milvus_uri, kb.name) in _running:
                    continue
            if kb.state == "creating":
                exclusive = self._exclusive() if exclusive is None else exclusive
                if not exclusive and now - kb.committed_ns < ABANDONED_AFTER_S * 1_000_000_000:
                    continue  # maybe another process's copy, still running
            self._remove(kb)
            done.append(kb.name)
        return done
