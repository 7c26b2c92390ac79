"""Kept originals: the bytes each document version was indexed from, so `reindex` can rebuild it, and a
sidecar per version saying which document they are, so `rebuild` can do it without the database.

An original belongs to its version: it is written as `<root>/<version>` before the version's commit and
removed when the version is retired, so the index and the kept original never disagree (a process killed
after the commit finds the new version's original already there). Versions are unique, so no two doc_ids
can collide (`a.md` and `a.md/b.md` both keep theirs). Files are written whole: a temporary name, then a
rename.

Which document a version is lives in the database's registry; a database that is lost or damaged would
take that with it. So next to each original is its sidecar, `<version>.<state>.json` (doc_id, file name,
content hashes, how it was indexed, when), whose name says where the version is in its life:

    <version>.pending.json    written before the original, before the commit (the write may still fail)
    <version>.json            committed: renamed from pending right after the registry's commit row
    <version>.retired.json    renamed before the registry forgets the version; then its files are removed

A rename is atomic, so a kill leaves each version in one state. `reconcile` (recovery, on open) removes
the files of versions no registry row refers to when they are pending (an interrupted write) or retired
(an interrupted removal), and keeps committed ones: those belong to a database that no longer has them
(it was lost, or moved aside and replaced), which is exactly what `rebuild --from` restores (through a
Milvus server, where other machines delete documents whose originals are here, they are removed). For the
versions the registry does refer to it writes any missing sidecar (data dirs from before sidecars: a
migration) and marks pending/retired ones committed (a kill between the commit and the rename). When other
processes may be writing (shared mode, a server), a pending version no row refers to may be a write still
running, so its files wait 6 hours; not when its writer is known to be gone (a killed process on this machine:
milvus.writers.known_gone), nor retired ones: those go at the next start of a store.

Before this layout, originals lived at `<data-dir>/uploads/<collection>/<doc_id>`, written after the
commit; `adopt_legacy` moves them into place on open, each one only if its text is the active version's.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ...errors import StoreError
from ...names import fold  # the one rule names are compared by (a folder is named after a collection)

log = logging.getLogger(__name__)

_VERSION = re.compile(r"[0-9a-f]{16}")
PARTIAL = ".partial"
SIDECAR_FORMAT = 1
# Sidecar file name suffix of each state, and back.
STATES = {"pending": ".pending.json", "committed": ".json", "retired": ".retired.json"}
_FILE = re.compile(r"(?P<version>[0-9a-f]{16})(?P<suffix>\.pending\.json|\.retired\.json|\.json|)(?P<partial>"
                   + re.escape(PARTIAL) + ")?")


@dataclass(frozen=True)
class KeptVersion:
    """What a kept original's sidecar says: which version of which document the bytes are."""

    doc_id: str
    version: str
    file_name: str
    extension: str
    size_bytes: int
    content_hash: str  # sha256 of the text indexed (Document.content_hash)
    fingerprint: str  # content, chunking and embedder (Ingestor.fingerprint)
    ingested_at: str  # ISO-8601 UTC
    written_ns: int  # when the version was written (orders versions of one document)
    original_sha256: str = ""  # of the kept bytes, to tell damaged bytes from the real ones
    # How it was indexed: chunk.max-size, chunk.overlap, embedder, chunker (empty when described after the
    # fact from the registry, which keeps only the fingerprint).
    indexed_with: Mapping[str, Any] = field(default_factory=dict)
    state: str = "pending"  # from the sidecar's file name, not stored in it

    def to_json(self) -> bytes:
        values = {"format": SIDECAR_FORMAT, **asdict(self), "indexed_with": dict(self.indexed_with)}
        del values["state"]
        return json.dumps(values, ensure_ascii=False, indent=1, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes, state: str) -> KeptVersion:
        """Raises ValueError naming what is wrong."""
        try:
            values = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not JSON ({exc})") from None
        if not isinstance(values, dict):
            raise ValueError("not a JSON object")
        if values.pop("format", None) != SIDECAR_FORMAT:
            raise ValueError(f"not a sidecar of format {SIDECAR_FORMAT}")
        try:
            kept = cls(**values, state=state)
        except TypeError as exc:
            raise ValueError(f"unexpected fields ({exc})") from None
        if not (isinstance(kept.doc_id, str) and kept.doc_id and isinstance(kept.version, str)
                and _VERSION.fullmatch(kept.version) and isinstance(kept.written_ns, int)):
            raise ValueError("no doc_id, version or write time")
        return kept


@dataclass(frozen=True)
class VersionFiles:
    """The files of one version in an originals folder, as a listing finds them."""

    version: str
    original: bool = False
    sidecars: tuple[str, ...] = ()  # states whose sidecar exists ("pending", "committed", "retired")
    partial: tuple[str, ...] = ()  # names of half-written files
    names: tuple[str, ...] = ()  # all of its files

    def age_s(self, root: Path, now: float) -> float:
        """Seconds since its newest file was written (stat only when asked: most versions never are)."""
        newest = 0.0
        for name in self.names:
            try:
                newest = max(newest, (root / name).stat(follow_symlinks=False).st_mtime)
            except FileNotFoundError:
                continue
        return now - newest

    @property
    def state(self) -> str:
        """Its sidecar's state ("" when it has none); committed wins over a pending left by a kill."""
        return next((s for s in ("committed", "retired", "pending") if s in self.sidecars), "")


def scan(root: Path) -> dict[str, VersionFiles]:
    """version -> its files in `root` (names that are not ours are ignored)."""
    found: dict[str, VersionFiles] = {}
    if not root.is_dir():
        return found
    for entry in os.scandir(root):
        match = _FILE.fullmatch(entry.name)
        if match is None or not entry.is_file(follow_symlinks=False):
            continue
        version = match["version"]
        files = found.get(version) or VersionFiles(version)
        files = replace(files, names=files.names + (entry.name,))
        if match["partial"]:
            files = replace(files, partial=files.partial + (entry.name,))
        elif match["suffix"]:
            state = next(s for s, suffix in STATES.items() if suffix == match["suffix"])
            files = replace(files, sidecars=files.sidecars + (state,))
        else:
            files = replace(files, original=True)
        found[version] = files
    return found


class OriginalFiles:
    """The kept originals of one collection and their sidecars, named by version."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path(self, version: str) -> Path:
        if not _VERSION.fullmatch(version):  # registry values never become paths unchecked
            raise StoreError(f"Not a document version: {version!r}.")
        return self.root / version

    def sidecar(self, version: str, state: str) -> Path:
        return self.path(version).with_name(version + STATES[state])

    def _write_whole(self, target: Path, data: bytes) -> None:
        partial = target.with_name(target.name + PARTIAL)
        partial.write_bytes(data)
        os.replace(partial, target)

    def write(self, version: str, data: bytes, kept: KeptVersion | None = None) -> None:
        """The original of `version`, after its sidecar (so no original is ever without one); the sidecar
        in `kept.state` (pending for a write before its commit). `kept` None: no sidecar (tests)."""
        self.root.mkdir(parents=True, exist_ok=True)
        if kept is not None:
            kept = replace(kept, version=version, original_sha256=hashlib.sha256(data).hexdigest())
            self._write_whole(self.sidecar(version, kept.state), kept.to_json())
        self._write_whole(self.path(version), data)

    def commit(self, versions: Iterable[str]) -> None:
        """Mark versions committed (right after the registry's commit row)."""
        self._move(versions, ("pending", "retired"), "committed")

    def retire(self, versions: Iterable[str]) -> None:
        """Mark versions retired (before the registry forgets them), so that a kill before their files are
        removed cannot leave them looking like a lost database's: recovery removes them."""
        self._move(versions, ("committed", "pending"), "retired")

    def _move(self, versions: Iterable[str], sources: tuple[str, ...], state: str) -> None:
        for version in versions:
            if not _VERSION.fullmatch(version):
                continue  # a registry value that is no version name has no files here
            target = self.sidecar(version, state)
            for source in sources:
                try:
                    os.replace(self.sidecar(version, source), target)
                    break
                except FileNotFoundError:
                    continue

    def read(self, version: str) -> bytes | None:
        try:
            return self.path(version).read_bytes()
        except FileNotFoundError:
            return None

    def has(self, version: str) -> bool:
        return self.path(version).is_file()

    def remove(self, versions: Iterable[str]) -> None:
        """The originals, then their sidecars (the state stays on disk until the bytes are gone)."""
        for version in versions:
            self.path(version).unlink(missing_ok=True)
            for state in STATES:
                self.sidecar(version, state).unlink(missing_ok=True)

    def clear(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def reconcile(self, live: Mapping[str, KeptVersion], spare: Iterable[str] = (), min_age_s: float = 0.0,
                  keep_committed: bool = True, gone: Iterable[str] = ()) -> int:
        """After recovery: `live` is version -> what the registry says of each active version; `spare`, every
        version a registry row refers to (pending ones too: their writes may still be running); `gone`, the
        versions whose writer is known to have stopped (milvus.writers.known_gone).

        Removes the files of versions it does not refer to that are pending (or have no sidecar, as before
        sidecars), and half-written files, if at least `min_age_s` old (on a shared server, a younger one may
        belong to a write still running); those of `gone` versions and of unreferenced retired ones whatever
        their age (a retired version is never used again: it was being removed when its remover stopped).
        Keeps unreferenced committed versions (a lost database's: see the module docstring) when
        `keep_committed`, else removes them too (through a server, other machines delete and replace documents
        whose originals this folder holds). Gives referenced versions with an original a committed sidecar.
        Returns how many versions' files were removed."""
        now, removed, foreign, described, spare = time.time(), 0, 0, 0, set(spare) | set(live)
        gone = set(gone) - spare
        for version, files in scan(self.root).items():
            if version in live:
                described += self._describe(live[version], files)
            def old_enough(files: VersionFiles = files) -> bool:  # stat only when asked: most versions never are
                return files.version in gone or files.age_s(self.root, now) >= min_age_s

            if files.partial and old_enough():  # half-written, whoever wrote them
                for name in files.partial:
                    (self.root / name).unlink(missing_ok=True)
            if version in spare:
                continue
            if files.state == "committed" and keep_committed:
                foreign += int(files.original)
            elif (files.original or files.sidecars) and (files.state == "retired" or old_enough()):
                self.remove([version])
                removed += 1
        if removed:
            log.info("removed the kept originals of %d versions no registry row refers to", removed)
        if described:
            log.info("wrote the sidecars of %d kept originals", described)
        if foreign:
            log.warning("%d kept originals in %s are of documents this database does not have (it was replaced "
                        "or lost); they are kept: `python -m rag_core [--data-dir DIR] rebuild --from %s` restores "
                        "them, or delete them", foreign, self.root, shlex.quote(str(self.root)))
        return removed

    def _describe(self, kept: KeptVersion, files: VersionFiles) -> int:
        """Give a referenced version's original a committed sidecar. Returns 1 when it had none."""
        if not files.original or files.sidecars == ("committed",):
            return 0
        if files.state == "committed":  # a kill between two renames left a second name: drop it
            for state in ("pending", "retired"):
                self.sidecar(files.version, state).unlink(missing_ok=True)
            return 0
        if files.state:  # pending: a kill right after the commit; retired: a removal that never happened
            self.commit([files.version])
            return 1
        data = self.read(files.version)  # no sidecar: kept before sidecars existed
        if data is None:
            return 0
        self._write_whole(self.sidecar(files.version, "committed"),
                          replace(kept, state="committed", original_sha256=hashlib.sha256(data).hexdigest()).to_json())
        return 1


def adopt_legacy(legacy_root: Path, originals: OriginalFiles, active: Mapping[str, KeptVersion],
                 text_hash: Callable[[bytes, str], str]) -> int:
    """Move originals kept in the old layout (`legacy_root/<doc_id>`) to their version's place.

    `active`: doc_id -> the active version (as the registry describes it) of each document that has no
    original yet. `text_hash(data, doc_id)` is the content hash of the text the bytes decode to: a file is
    adopted only when it matches the active version's (the old layout wrote originals after the commit, so
    a killed process could leave the previous version's bytes). Files that do not match stay where they
    are and their documents are listed without an original. Returns how many were adopted."""
    if not legacy_root.is_dir():
        return 0
    adopted = 0
    for doc_id, kept in sorted(active.items()):
        legacy = legacy_root / doc_id
        if not legacy.is_file() or not legacy.resolve().is_relative_to(legacy_root.resolve()):
            continue
        data = legacy.read_bytes()
        try:
            matches = text_hash(data, doc_id) == kept.content_hash
        except Exception:  # noqa: BLE001 - bytes that no longer load are not this version's original
            matches = False
        if not matches:
            log.warning("%s: the kept original in %s is not the indexed version's; not adopted", doc_id, legacy_root)
            continue
        originals.write(kept.version, data, replace(kept, state="committed"))
        legacy.unlink()
        adopted += 1
    remove_empty_folders(legacy_root)
    if adopted:
        log.info("adopted %d kept originals from %s", adopted, legacy_root)
    return adopted


def shared_with_variant(root: Path, names: Iterable[str]) -> bool:
    """Whether folder `root` (named after a collection) is also the folder of one of `names` that differs from its
    name only by letter case: the same folder on a case-insensitive file system (macOS, Windows), where removing
    it would remove the other's kept originals too."""
    if not root.exists():
        return False
    for other in names:
        sibling = root.with_name(other)
        if other != root.name and fold(other) == fold(root.name) and sibling.exists():
            if os.path.samefile(root, sibling):
                return True
    return False


def remove_empty_folders(root: Path) -> None:
    for folder, _, _ in sorted(os.walk(root), key=lambda entry: -len(entry[0])):
        try:
            os.rmdir(folder)  # only succeeds when empty
        except OSError:
            pass
