"""The kept originals of a knowledge base read without its database: what `rebuild` restores from.

Each kept original's sidecar names its document (see originals.files), so a folder of them is enough to
list the documents and read their bytes. Per document the newest committed version is the one restored;
a pending version (its write was interrupted, maybe by whatever damaged the database) is restored only when
it is all there is, and said so. Folders of the older layout (`uploads/<collection>/<doc_id>`) name
documents by path. Nothing here writes, except `discard` (a rebuild into the same data dir removes the
versions it has restored).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ...errors import LoaderError, OriginalMissing, StoreError
from ...loaders.doc_ids import normalize_doc_id
from ...ports import KeptChunkEdits, KeptLabels
from ...records import StoredDocument
from ..edits import ChunkEdits
from .files import STATES, KeptVersion, OriginalFiles, remove_empty_folders, scan


class OriginalDamaged(StoreError):
    """A kept original's bytes are not the ones its sidecar describes."""

    code = "damaged_original"


@dataclass(frozen=True)
class Unusable:
    """A kept file that cannot be restored as a document, and why."""

    path: str
    reason: str
    code: str  # "unnamed" | "bad_sidecar" | "not_adopted"
    doc_id: str = ""


@dataclass(frozen=True)
class _Choice:
    kept: KeptVersion
    path: Path  # the original's bytes
    has_bytes: bool = True


class KeptOriginalsFolder:
    """The documents of a folder of kept originals: the KeptOriginals port (rag_core.ports) that
    `Ingestor.reindex(source=...)` rebuilds from. Build it with `read_folder` or `read_legacy_folder`."""

    def __init__(self, root: Path, layout: str, chosen: dict[str, _Choice], unusable: list[Unusable],
                 notes: list[str], versions: dict[str, list[str]]) -> None:
        self.root = root
        self.layout = layout  # "versions" (originals/<collection>/<version>) or "uploads" (by doc_id)
        self._chosen = chosen
        self.unusable = unusable  # files that name no restorable document: reported as failed
        self.notes = notes  # what was chosen when a choice was made
        self._versions = versions  # doc_id -> every version of it found (for `discard`)
        # the chunk edits kept beside the folder (store.edits), re-applied by the rebuild; only read here
        beside = root.parent / f"{root.name}.edits.json"
        self.edits: KeptChunkEdits | None = ChunkEdits(beside) if layout == "versions" and beside.is_file() else None
        self.labels: KeptLabels | None = None  # tags are not restored from the folder

    def list_documents(self) -> list[StoredDocument]:
        return [StoredDocument(doc_id=doc_id, file_name=c.kept.file_name, extension=c.kept.extension,
                               size_bytes=c.kept.size_bytes, chunks=0, content_hash=c.kept.content_hash,
                               version=c.kept.version, ingested_at=c.kept.ingested_at, has_original=c.has_bytes)
                for doc_id, c in sorted(self._chosen.items())]

    def kept(self, doc_id: str) -> KeptVersion | None:
        """What the sidecar of the version chosen for `doc_id` says."""
        choice = self._chosen.get(doc_id)
        return choice.kept if choice is not None else None

    def read_original(self, doc_id: str) -> bytes | None:
        """The chosen version's bytes, checked against its sidecar. None for a document not found here;
        OriginalMissing / OriginalDamaged (with the path) when the bytes are gone or not the ones kept."""
        choice = self._chosen.get(doc_id)
        if choice is None:
            return None
        try:
            if not choice.has_bytes:  # not there when listed (or not a plain file: never followed)
                raise FileNotFoundError
            data = choice.path.read_bytes()
        except FileNotFoundError:
            raise OriginalMissing(f"{doc_id}: its kept original {choice.path} is missing (only its sidecar is "
                                  "left); ingest it again from its file") from None
        except OSError as exc:
            raise OriginalMissing(f"{doc_id}: its kept original {choice.path} cannot be read "
                                  f"({exc.strerror})") from None
        expected = choice.kept.original_sha256
        if expected and hashlib.sha256(data).hexdigest() != expected:
            raise OriginalDamaged(f"{doc_id}: its kept original {choice.path} is damaged (its bytes are not the "
                                  "ones kept: another sha256); ingest it again from its file")
        return data

    def discard(self, doc_ids: list[str]) -> None:
        """Remove every version found of these documents (retired first, as the store removes versions),
        or their files of the older layout. Only for a rebuild into the data dir the folder belongs to,
        once they are indexed again (and so kept again, in their new versions)."""
        files = OriginalFiles(self.root)
        for doc_id in doc_ids:
            if self.layout == "uploads" and doc_id in self._chosen:
                self._chosen[doc_id].path.unlink(missing_ok=True)
                continue
            versions = self._versions.get(doc_id, [])
            files.retire(versions)
            files.remove(versions)
        if self.layout == "uploads":
            remove_empty_folders(self.root)


def holds_versions(folder: Path) -> bool:
    """Whether `folder` holds kept originals or sidecars named by version."""
    return bool(scan(folder))


def read_folder(root: Path, exclude: Collection[str] = ()) -> KeptOriginalsFolder:
    """The documents of a folder of kept originals named by version (`originals/<collection>`), leaving
    out the versions in `exclude` (those the target knowledge base already refers to)."""
    found: dict[str, list[_Choice]] = {}
    unusable: list[Unusable] = []
    for version, files in sorted(scan(root).items()):
        if version in exclude or files.state == "retired":
            continue  # retired: being removed (an older version, or a deleted document): never restored
        path = root / version
        if not files.state:
            if files.original:
                unusable.append(Unusable(str(path), "a kept original without a sidecar (kept by a release before "
                                         "sidecars; which document it is was only in the database): ingest its "
                                         "file again under its name", "unnamed"))
            continue
        if not files.original and files.state == "pending":
            continue  # a write interrupted before its original was written: it never held a document
        sidecar = root / (version + STATES[files.state])
        try:
            kept = KeptVersion.from_json(sidecar.read_bytes(), files.state)
            if kept.version != version:
                raise ValueError(f"it describes version {kept.version}")
            normalize_doc_id(kept.doc_id)  # a damaged (or forged) sidecar never names `../x` or `/etc/x`
        except (OSError, ValueError, LoaderError) as exc:
            unusable.append(Unusable(str(sidecar), f"a damaged sidecar ({exc}), so the original {path} cannot be "
                                     "named: ingest its file again", "bad_sidecar"))
            continue
        found.setdefault(kept.doc_id, []).append(_Choice(kept, path, files.original))
    chosen: dict[str, _Choice] = {}
    notes: list[str] = []
    for doc_id, choices in found.items():
        newest_first = sorted(choices, key=lambda c: (c.kept.written_ns, c.kept.version), reverse=True)
        committed = [c for c in newest_first if c.kept.state == "committed"]
        chosen[doc_id] = choice = committed[0] if committed else newest_first[0]
        if not committed:
            notes.append(f"{doc_id}: its only kept version ({_when(choice.kept)}) was being written when the "
                         "database was lost, so it may never have been indexed; restored anyway")
        elif newest_first[0] is not choice:
            notes.append(f"{doc_id}: restored the last committed version ({_when(choice.kept)}); a newer one "
                         f"({_when(newest_first[0].kept)}) was being written when the database was lost, and "
                         "probably never committed: ingest the file again if you want it")
    versions = {doc_id: [c.kept.version for c in choices] for doc_id, choices in found.items()}
    return KeptOriginalsFolder(root, "versions", chosen, unusable, notes, versions)


def read_legacy_folder(root: Path, *, leftovers: bool = False) -> KeptOriginalsFolder:
    """The documents of an older release's originals folder (`uploads/<collection>/<doc_id>`).
    `leftovers`: the data dir also has originals named by version, so a release with sidecars opened it
    and adopted every file that was its document's indexed text: the files left are not, and are reported
    as unusable instead of restored."""
    chosen: dict[str, _Choice] = {}
    unusable: list[Unusable] = []
    for folder, _dirs, names in os.walk(root):  # os.walk never follows a link to a folder
        for name in sorted(names):
            path = Path(folder) / name
            doc_id = path.relative_to(root).as_posix()
            if path.is_symlink():
                continue  # never ours: we wrote files
            if leftovers:
                unusable.append(Unusable(str(path), f"{doc_id}: kept in the older layout and not adopted, since its "
                                         "text is not the indexed version's: ingest its file again", "not_adopted",
                                         doc_id))
                continue
            stat = path.stat()
            written = datetime.fromtimestamp(stat.st_mtime, UTC).isoformat(timespec="seconds")
            kept = KeptVersion(doc_id=doc_id, version="", file_name=name, extension=Path(name).suffix[1:].lower(),
                               size_bytes=stat.st_size, content_hash="", fingerprint="", ingested_at=written,
                               written_ns=stat.st_mtime_ns, state="committed")
            chosen[doc_id] = _Choice(kept, path)
    return KeptOriginalsFolder(root, "uploads", chosen, unusable, [], {})


def _when(kept: KeptVersion) -> str:
    return f"version {kept.version}, ingested {kept.ingested_at}"
