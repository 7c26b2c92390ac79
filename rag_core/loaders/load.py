"""Bytes + a name -> `Document`: size and type checks, then the extractor the format registry (`formats`) has for
the type."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ..doc_ids import doc_id_for, normalize_doc_id
from ..errors import LoaderError
from ..phrases import english
from ..records import Document, Place
from . import damage
from .formats import BY_EXTENSION, SUPPORTED_TEXT, extension_or_raise
from .limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_TEXT_CHARS, TextBudget, too_big
from .options import LoadOptions
from .quiet import heard
from .running import drop_running
from .text import NotText


def load_path(
    path: Path,
    root: Path | None = None,
    *,
    prefix: str = "",
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
    options: LoadOptions | None = None,
) -> Document:
    """Read and decode one file. The size is checked before reading, so huge files cost nothing.

    With a `root` (a folder being ingested), a symbolic link is followed only when its target is inside
    that folder: a link out of it (`passwd.md -> /etc/passwd`) is refused with code "symlink_outside"."""
    doc_id, data = read_path(path, root, prefix=prefix, max_bytes=max_bytes)
    return load_bytes(data, doc_id, max_bytes=max_bytes, max_text_chars=max_text_chars, options=options)


def read_path(path: Path, root: Path | None = None, *, prefix: str = "",
              max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[str, bytes]:
    """(doc_id, bytes) of one file, with `load_path`'s checks: for callers that keep the bytes read
    (ingest keeps them as the document's original) instead of reading the file a second time."""
    path = Path(path)
    target = _inside(path, root) if root is not None else None
    doc_id = doc_id_for(path, root, prefix)
    extension_or_raise(doc_id)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise LoaderError(f"{path}: file not found") from None
    except PermissionError:
        raise LoaderError(f"{path}: permission denied; check the file's permissions") from None
    except OSError as exc:
        raise LoaderError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise LoaderError(f"{path}: is a folder, not a file; ingest the folder to index the files in it",
                          code="unsupported")
    if not stat.S_ISREG(st.st_mode):
        raise LoaderError(f"{path}: is not a regular file (a pipe, socket or device); nothing to index",
                          code="unsupported")
    if st.st_size > max_bytes:
        raise too_big(str(path), st.st_size, max_bytes)
    try:
        with path.open("rb") as fh:
            if target is not None and not _same_file(os.fstat(fh.fileno()), target):
                # The name was swapped for a link between the check and the open.
                raise _outside(path, root, os.path.realpath(path))
            data = fh.read(max_bytes + 1)  # +1: notice a file that grew after stat()
    except PermissionError:
        raise LoaderError(f"{path}: permission denied; check the file's permissions") from None
    except OSError as exc:
        raise LoaderError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise too_big(str(path), len(data), max_bytes)
    return doc_id, data


def load_bytes(data: bytes, doc_id: str, *, max_bytes: int = DEFAULT_MAX_BYTES,
               max_text_chars: int = DEFAULT_MAX_TEXT_CHARS, options: LoadOptions | None = None) -> Document:
    """Turn the bytes of one file into a `Document`; `doc_id` also gives the name and the type.

    `max_bytes` usually comes from the setting `loader.max-file-mb` (`int(mb * 1024 * 1024)`),
    `max_text_chars` from `loader.max-text-chars`: extraction stops as soon as it is passed; `options`
    (`load_options(settings)`) from the other `loader.*` settings (time, OCR, Q&A columns).
    """
    doc_id = normalize_doc_id(doc_id)
    ext = extension_or_raise(doc_id)
    options = options or LoadOptions()
    data = bytes(data)
    size = len(data)
    if size > max_bytes:
        raise too_big(doc_id, size, max_bytes)
    if size == 0:
        raise LoaderError(f"{doc_id}: the file is empty (0 bytes); nothing to index", code="empty")
    budget = TextBudget(doc_id, max_text_chars, seconds=options.max_seconds)
    try:
        with heard(doc_id) as said:  # what the reading libraries warn: notes and the log, not the terminal
            extracted = BY_EXTENSION[ext].extract(data, doc_id, ext, budget, options)
    except NotText as refusal:
        raise refusal.naming(SUPPORTED_TEXT) from None
    extracted = replace(extracted, notes=(*extracted.notes, *said.notes()))
    extracted = damage.checked(extracted, data, doc_id, ext, budget, options)  # unreadable characters: notes, OCR
    extracted = drop_running(extracted)  # the lines repeated at the top or bottom of most pages (loaders.running)
    budget.check(extracted.text)
    return Document(
        doc_id=doc_id,
        text=extracted.text,
        file_name=doc_id.rsplit("/", 1)[-1],
        extension=ext,
        size_bytes=size,
        content_hash=content_hash(extracted.text, extracted.places),
        encoding=extracted.encoding,
        places=extracted.places,
        notes=tuple(english(n) for n in extracted.notes),
        note_phrases=extracted.notes,
        fields=dict(extracted.fields),
    )


def content_hash(text: str, places: Sequence[Place] = ()) -> str:
    """sha256 of the text, and of where its pages, slides or rows start when it has them (so a re-read that
    finds the same text on other pages makes a new version)."""
    digest = hashlib.sha256(text.encode("utf-8"))
    if places:
        rows = [[p.offset, p.unit, p.number, p.sheet, p.ocr, *([p.question] if p.question else [])] for p in places]
        digest.update(b"\x00" + json.dumps(rows, ensure_ascii=False).encode("utf-8"))
    return digest.hexdigest()


def _inside(path: Path, root: Path) -> os.stat_result | None:
    """The identity (stat) of the file `path` really names, checked to lie inside `root`: a symbolic link
    (in the name or a folder on the way) is followed only to a target inside the folder being ingested.
    None for a dangling link (the stat below then says "file not found")."""
    real = os.path.realpath(path)
    real_root = os.path.realpath(root)
    if os.path.commonpath([real, real_root]) != real_root:
        raise _outside(path, root, real)
    try:
        return os.stat(real)
    except OSError:
        return None


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _outside(path: Path, root: Path | None, real: str) -> LoaderError:
    return LoaderError(
        f"{path}: skipped: a symbolic link to {real}, outside the folder being ingested ({root}); links are "
        "only followed inside that folder (copy the file in, or ingest it by its own path)",
        code="symlink_outside")
