"""What the registry said a moment ago: which version of each document is active, remembered for a second
so that a search need not read the registry every time.

A hybrid lookup read the registry once per channel: two queries, ~1.2 ms of CPU in the API process and
~1.2 ms in Milvus Lite's of the ~18 ms a `/v1/search` costs at 10k chunks (bench/api.py measures it). The
search reads it once for both channels, and not at all when every hit agrees with what is remembered here.

Why that stays correct under concurrent re-indexing (milvus.store describes the write protocol):
- A remembered view is trusted only when EVERY hit of the search carries the remembered version of its
  document. A hit of any other version (a new version being written or just committed, a document this
  process has not seen) makes the search read the registry as before, so hits are only ever dropped after a
  fresh read, and a reader never sees a document with zero chunks. One view (remembered or read) judges the
  hits of both channels, so a document never shows two versions in one lookup.
- A remembered version that is no longer active can still match hits only while its chunks exist: between
  another writer's commit and its deletion of the old chunks (milliseconds, the same answer a lookup begun
  just before the commit gives), or after a writer died in between, until recovery. Entries expire after
  TTL_S, which bounds how long such a complete previous version can be shown.
- This process's own writes and deletes forget their documents at once, and a registry read that started
  before such a change is not remembered (the generation check).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping

TTL_S = 1.0
MAX_ENTRIES = 100_000  # one per document seen in hits; beyond this, start afresh


class ActiveVersions:
    """doc_id -> the version the registry called active, and when that read began. Thread-safe."""

    def __init__(self, ttl_s: float = TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self.clock = clock
        self._entries: dict[str, tuple[str, float]] = {}
        self._generation = 0
        self._lock = threading.Lock()

    def begin_read(self) -> tuple[int, float]:
        """Call before reading the registry; pass the token to `remember`."""
        with self._lock:
            return self._generation, self.clock()

    def remember(self, token: tuple[int, float], doc_ids: Iterable[str], active: Mapping[str, str]) -> None:
        """What a registry read begun at `token` found for `doc_ids` (absent = not active: not remembered)."""
        generation, started = token
        with self._lock:
            if generation != self._generation:
                return  # a write or delete of this process happened meanwhile: the read may predate it
            if len(self._entries) > MAX_ENTRIES:
                self._entries.clear()
            for doc_id in doc_ids:
                version = active.get(doc_id)
                if version is None:
                    self._entries.pop(doc_id, None)
                else:
                    self._entries[doc_id] = (version, started)

    def recall(self, doc_ids: Iterable[str]) -> dict[str, str] | None:
        """The remembered versions of all of `doc_ids`, or None when any is unknown or expired."""
        oldest = self.clock() - self.ttl_s
        found = {}
        with self._lock:
            for doc_id in doc_ids:
                entry = self._entries.get(doc_id)
                if entry is None or entry[1] < oldest:
                    return None
                found[doc_id] = entry[0]
        return found

    def forget(self, doc_ids: Iterable[str] | None = None) -> None:
        """After this process changed these documents (None: all of them)."""
        with self._lock:
            self._generation += 1
            if doc_ids is None:
                self._entries.clear()
            else:
                for doc_id in doc_ids:
                    self._entries.pop(doc_id, None)
