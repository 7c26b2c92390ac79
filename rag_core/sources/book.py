"""The sources of every knowledge base, kept as one JSON document (store.kept: `sources.json` in the data folder,
or a row of the shared database's kept_records when database.url is set), read whole, changed and written whole
under a lock, so a failed write leaves the sources as they were. Each source keeps, besides its settings, its last
sync's status and what that sync indexed: each item's version, content hash, URL and metadata (its provenance)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ..errors import SourceError, UnknownSource
from ..files import FileLock

if TYPE_CHECKING:
    from ..store.kept import KeptDocument

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class Source:
    """One source of a knowledge base. `folder`: where its documents go in the knowledge base (`<folder>/<path>`);
    `status`: its last sync's (sync.SyncResult.to_dict), {} before the first; `indexed`: path -> {version, hash,
    url, meta} of the items the syncs indexed; `every`: minutes between the syncs `serve` runs (0: only when asked;
    sources/schedule.py)."""

    name: str
    kb: str
    type: str
    location: str
    folder: str
    options: dict[str, Any] = field(default_factory=dict)
    status: dict[str, Any] = field(default_factory=dict)
    indexed: dict[str, dict[str, Any]] = field(default_factory=dict)
    every: int = 0

    @property
    def key(self) -> str:
        return f"{self.kb}/{self.name}"

    def to_dict(self) -> dict[str, Any]:
        """As `sources list|show --json` print it (the indexed items counted, not listed)."""
        out = {k: v for k, v in asdict(self).items() if k != "indexed"}
        out["documents"] = len(self.indexed)
        return out


def default_name(location: str) -> str:
    """A name from the location's last part: `/mnt/docs/` -> `docs`, `https://x.org/a.git` -> `a`, `OPS.zip` ->
    `OPS` (an export)."""
    last = PurePosixPath(location.rstrip("/\\").replace("\\", "/")).name or "source"
    stem = re.sub(r"\.(git|zip)$", "", last)
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", stem).strip("_.-")[:64] or "source"


def _nested(a: str, b: str) -> bool:
    """One folder is the other or inside it."""
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


class SourceBook:
    """The sources kept in `document`, changed under `lock`; `locks`: the folder of each source's sync lock (None:
    this process's locks), `beyond`: a source's lock across machines (the shared database's)."""

    def __init__(self, document: KeptDocument, lock: FileLock, locks: Path | None,
                 beyond: Callable[[str], Callable[[bool], AbstractContextManager[bool]]] | None = None) -> None:
        self.document = document
        self.lock = lock
        self.locks = locks
        self.beyond = beyond  # source key -> its lock in the shared database, taken after the file's
        self._sync_locks: dict[str, FileLock] = {}

    def all(self, kb: str | None = None) -> list[Source]:
        found = [Source(**raw) for raw in self.document.read().get("sources", {}).values()]
        return sorted((s for s in found if kb is None or s.kb == kb), key=lambda s: (s.kb, s.name))

    def get(self, name: str, kb: str | None = None) -> Source:
        """The source `name` (`KB/NAME`, or NAME with `kb`, or NAME alone when one knowledge base has it)."""
        if "/" in name and kb is None:
            kb, _, name = name.partition("/")
        found = [s for s in self.all(kb) if s.name == name]
        if not found:
            where = f" of knowledge base {kb!r}" if kb else ""
            raise UnknownSource(f"unknown source {name!r}{where}; `sources list` shows them")
        if len(found) > 1:
            raise SourceError(f"source {name!r} is in several knowledge bases ({', '.join(s.kb for s in found)}); "
                              f"name it as KB/{name}")
        return found[0]

    def add(self, source: Source) -> Source:
        if not NAME.fullmatch(source.name):
            raise SourceError(f"source name {source.name!r}: use letters, digits, '_', '.' and '-' (at most 64)")
        with self.lock():
            data = self.document.read()
            sources = data.setdefault("sources", {})
            if source.key in sources:
                raise SourceError(f"knowledge base {source.kb!r} has a source {source.name!r} already; "
                                  "choose another --name")
            for other in (Source(**raw) for raw in sources.values()):
                if other.kb == source.kb and _nested(other.folder, source.folder):
                    raise SourceError(f"source {other.key} fills the folder {other.folder}/ already; give this one "
                                      "a --folder of its own (a sync deletes what its folder holds that the source "
                                      "does not)")
            sources[source.key] = asdict(source)
            self.document.write(data)
        return source

    def save(self, source: Source, status: Mapping[str, Any], indexed: Mapping[str, Mapping[str, Any]]) -> Source:
        """The source's last sync recorded (its status and what it indexed); a source removed meanwhile stays gone."""
        done = replace(source, status=dict(status), indexed={k: dict(v) for k, v in indexed.items()})
        with self.lock():
            data = self.document.read()
            sources = data.setdefault("sources", {})
            if source.key in sources:
                sources[source.key] = {**sources[source.key], "status": done.status, "indexed": done.indexed}
                self.document.write(data)
        return done

    def set_every(self, source: Source, every: int) -> Source:
        """The source with `every` minutes between its scheduled syncs (0: only when asked)."""
        if every < 0:
            raise SourceError(f"every {every}: give the minutes between scheduled syncs (0: none)")
        return Source(**self._change(source, lambda raw: raw.update(every=every)))

    def started(self, source: Source, at: str) -> None:
        """A sync of `source` began at `at`: its status says so (`running_since`) until the sync records its end, so a
        sync killed midway shows as not finished rather than as the last one that did."""
        self._change(source, lambda raw: raw.update(status={**raw.get("status", {}), "running_since": at}))

    def _change(self, source: Source, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        with self.lock():
            data = self.document.read()
            raw = data.get("sources", {}).get(source.key)
            if raw is None:
                raise UnknownSource(f"unknown source {source.name!r} of knowledge base {source.kb!r}; "
                                    "`sources list` shows them")
            change(raw)
            self.document.write(data)
            return dict(raw)

    def remove(self, source: Source) -> None:
        with self.lock():
            data = self.document.read()
            data.get("sources", {}).pop(source.key, None)
            self.document.write(data)

    def sync_lock(self, source: Source) -> FileLock:
        """The lock a sync of `source` holds, so it never runs twice at once: across the processes of one machine,
        and across machines with the shared database."""
        if source.key not in self._sync_locks:
            path = None if self.locks is None else self.locks / f"{source.kb}.{source.name}.lock"
            beyond = self.beyond(f"{source.kb}.{source.name}") if self.beyond is not None else None
            self._sync_locks[source.key] = FileLock(path, beyond)
        return self._sync_locks[source.key]

    def __iter__(self) -> Iterator[Source]:
        return iter(self.all())
