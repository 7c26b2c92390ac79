"""Chunk edits kept beside the index: which chunks a person disabled, with each chunk's history (who, when, what).

One JSON file per knowledge base (`<data-dir>/originals/<collection>.edits.json`), replaced atomically (a temporary
file, fsync, rename): a process killed during an edit leaves the old state or the new one, never neither. An edit
is recorded against the chunk's content (`chunkHash`, the sha256 of its text, as the chunk rows carry it) and the
document version it was made on, so it keeps applying when the document is re-indexed or re-uploaded unchanged and
stops applying (a conflict, listed by `conflicts`) when the chunk under that evidence key now holds other text.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..files import read_json_object, write_atomic


class ChunkEdits:
    """evidence key -> {"doc_id", "version", "hash", "disabled", "history": [...]}; in memory when `path` is None."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._memory: dict[str, dict[str, Any]] = {}

    def _read(self) -> dict[str, dict[str, Any]]:
        if self.path is None:
            return json.loads(json.dumps(self._memory))
        return read_json_object(self.path, "The chunk edits in {path} cannot be read ({exc}); restore or delete the "
                                           "file.")

    def all(self) -> dict[str, dict[str, Any]]:
        return self._read()

    def disabled(self) -> dict[str, str]:
        """evidence key -> the content hash it was disabled on."""
        return {key: str(e.get("hash", "")) for key, e in self._read().items() if e.get("disabled")}

    def history(self, key: str) -> list[dict[str, Any]]:
        return list(self._read().get(key, {}).get("history") or [])

    def set_disabled(self, key: str, *, doc_id: str, version: str, chunk_hash: str, disabled: bool, who: str,
                     ) -> dict[str, Any]:
        """Disable (or enable) the chunk `key` holding the text of `chunk_hash`; recorded in its history."""
        with self._lock:
            data = self._read()
            entry = data.setdefault(key, {"history": []})
            entry.update({"doc_id": doc_id, "version": version, "hash": chunk_hash, "disabled": disabled})
            entry["history"].append({"who": who or "local", "when": datetime.now(UTC).isoformat(timespec="seconds"),
                                     "what": "disabled" if disabled else "enabled", "version": version})
            self._write(data)
            return entry

    def set_content(self, key: str, *, doc_id: str, version: str, chunk_hash: str, text: str | None,
                    keywords: list[str] | None, questions: list[str] | None, who: str) -> dict[str, Any]:
        """Record a chunk's edited text (None: keep the one it has) and its keywords and example questions (None:
        keep them), made on the text of `chunk_hash`."""
        with self._lock:
            data = self._read()
            entry = data.setdefault(key, {"history": [], "disabled": False})
            entry.update({"doc_id": doc_id, "version": version, "hash": chunk_hash})
            what = []
            for name, value in (("text", text), ("keywords", keywords), ("questions", questions)):
                if value is not None:
                    entry[name] = value
                    what.append(f"{name} edited" if name == "text" else f"{name}: {', '.join(value) or 'none'}")
            entry["history"].append({"who": who or "local", "when": datetime.now(UTC).isoformat(timespec="seconds"),
                                     "what": "; ".join(what), "version": version})
            self._write(data)
            return entry

    def revert(self, key: str, who: str) -> None:
        """Back to the original: the edit's text, keywords and questions are dropped (its history stays)."""
        with self._lock:
            data = self._read()
            entry = data.setdefault(key, {"history": [], "disabled": False})
            for name in ("text", "keywords", "questions"):
                entry.pop(name, None)
            entry["history"].append({"who": who or "local", "when": datetime.now(UTC).isoformat(timespec="seconds"),
                                     "what": "reverted to the original"})
            self._write(data)

    def _write(self, data: Mapping[str, Any]) -> None:
        if self.path is None:
            self._memory = json.loads(json.dumps(data))
            return
        write_atomic(self.path, json.dumps(data, ensure_ascii=False, sort_keys=True))

    def conflicts(self, current: Mapping[str, str]) -> list[str]:
        """Disabled chunks whose evidence key now holds other text (`current`: evidence key -> content hash of the
        documents just re-indexed): the edit no longer applies to them."""
        return sorted(key for key, chunk_hash in self.disabled().items()
                      if key in current and current[key] != chunk_hash)

    def copy_from(self, source: ChunkEdits, doc_ids: Iterable[str]) -> None:
        """The edits of `doc_ids` in `source` (another knowledge base: kb copy, reindex --from) made these. They
        apply where the copy's chunks hold the same text (another chunking makes other chunks)."""
        ids = set(doc_ids)
        theirs = {k: v for k, v in source.all().items() if v.get("doc_id") in ids}
        if theirs:
            with self._lock:
                self._write({**self._read(), **theirs})

    def forget(self, doc_ids: Iterable[str]) -> None:
        ids = set(doc_ids)
        with self._lock:
            data = self._read()
            self._write({k: v for k, v in data.items() if v.get("doc_id") not in ids})

    def drop(self) -> None:
        with self._lock:
            self._memory = {}
            if self.path is not None:
                self.path.unlink(missing_ok=True)
