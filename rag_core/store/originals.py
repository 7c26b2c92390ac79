"""Kept originals: the bytes each document version was indexed from, so `reindex` can rebuild it.

An original belongs to its version: it is written as `<root>/<version>` before the version's commit and
removed when the version is retired, so the index and the kept original never disagree (a process killed
after the commit finds the new version's original already there). Versions are unique, so no two doc_ids
can collide (`a.md` and `a.md/b.md` both keep theirs). Files are written whole: a temporary name, then a
rename. `reconcile` removes originals no registry row refers to (what an interrupted write left).

Before this layout, originals lived at `<data-dir>/uploads/<collection>/<doc_id>`, written after the
commit; `adopt_legacy` moves them into place on open, each one only if its text is the active version's.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import time
from pathlib import Path
from typing import Callable, Iterable

from ..errors import StoreError

log = logging.getLogger(__name__)

_VERSION = re.compile(r"[0-9a-f]{16}")
PARTIAL = ".partial"


class OriginalFiles:
    """The kept originals of one collection, named by version."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path(self, version: str) -> Path:
        if not _VERSION.fullmatch(version):  # registry values never become paths unchecked
            raise StoreError(f"Not a document version: {version!r}.")
        return self.root / version

    def write(self, version: str, data: bytes) -> None:
        target = self.path(version)
        self.root.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + PARTIAL)
        partial.write_bytes(data)
        os.replace(partial, target)

    def read(self, version: str) -> bytes | None:
        try:
            return self.path(version).read_bytes()
        except FileNotFoundError:
            return None

    def has(self, version: str) -> bool:
        return self.path(version).is_file()

    def remove(self, versions: Iterable[str]) -> None:
        for version in versions:
            self.path(version).unlink(missing_ok=True)

    def clear(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def reconcile(self, referenced: set[str], min_age_s: float = 0.0) -> int:
        """Remove the originals (and half-written files) of versions no registry row refers to, if at
        least `min_age_s` old (on a shared server, a younger one may belong to a write still running).
        Returns how many were removed."""
        if not self.root.is_dir():
            return 0
        now, removed = time.time(), 0
        for entry in os.scandir(self.root):
            version = entry.name.removesuffix(PARTIAL)
            if (entry.is_file() and _VERSION.fullmatch(version)
                    and (version not in referenced or entry.name.endswith(PARTIAL))
                    and now - entry.stat().st_mtime >= min_age_s):
                os.unlink(entry.path)
                removed += 1
        if removed:
            log.info("removed %d kept originals no version refers to", removed)
        return removed


def adopt_legacy(legacy_root: Path, originals: OriginalFiles, active: dict[str, tuple[str, str]],
                 text_hash: Callable[[bytes, str], str]) -> int:
    """Move originals kept in the old layout (`legacy_root/<doc_id>`) to their version's place.

    `active`: doc_id -> (version, content_hash) of each active version that has no original yet.
    `text_hash(data, doc_id)` is the content hash of the text the bytes decode to: a file is adopted only
    when it matches the active version's (the old layout wrote originals after the commit, so a killed
    process could leave the previous version's bytes). Files that do not match stay where they are and
    their documents are listed without an original. Returns how many were adopted."""
    if not legacy_root.is_dir():
        return 0
    adopted = 0
    for doc_id, (version, content_hash) in sorted(active.items()):
        legacy = legacy_root / doc_id
        if not legacy.is_file() or not legacy.resolve().is_relative_to(legacy_root.resolve()):
            continue
        data = legacy.read_bytes()
        try:
            matches = text_hash(data, doc_id) == content_hash
        except Exception:  # noqa: BLE001 - bytes that no longer load are not this version's original
            matches = False
        if not matches:
            log.warning("%s: the kept original in %s is not the indexed version's; not adopted", doc_id, legacy_root)
            continue
        originals.write(version, data)
        legacy.unlink()
        adopted += 1
    _remove_empty_folders(legacy_root)
    if adopted:
        log.info("adopted %d kept originals from %s", adopted, legacy_root)
    return adopted


def _remove_empty_folders(root: Path) -> None:
    for folder, _, _ in sorted(os.walk(root), key=lambda entry: -len(entry[0])):
        try:
            os.rmdir(folder)  # only succeeds when empty
        except OSError:
            pass
