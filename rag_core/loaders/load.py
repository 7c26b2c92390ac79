"""Bytes + a name -> `Document`: size and type checks, then the decoder or extractor for the type."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

from ..errors import LoaderError
from ..records import Document
from .doc_ids import doc_id_for, normalize_doc_id
from .formats import DEFAULT_MAX_BYTES, TEXT_EXTENSIONS, extension_or_raise, too_big
from .pdf import pdf_text
from .text import decode_text
from .word import docx_text


def load_path(
    path: Path,
    root: Path | None = None,
    *,
    prefix: str = "",
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Document:
    """Read and decode one file. The size is checked before reading, so huge files cost nothing."""
    path = Path(path)
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
        raise LoaderError(f"{path}: is a folder, not a file; ingest the folder to index the files in it")
    if not stat.S_ISREG(st.st_mode):
        raise LoaderError(f"{path}: is not a regular file (a pipe, socket or device); nothing to index")
    if st.st_size > max_bytes:
        raise too_big(str(path), st.st_size, max_bytes)
    try:
        with path.open("rb") as fh:
            data = fh.read(max_bytes + 1)  # +1: notice a file that grew after stat()
    except PermissionError:
        raise LoaderError(f"{path}: permission denied; check the file's permissions") from None
    except OSError as exc:
        raise LoaderError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise too_big(str(path), len(data), max_bytes)
    return load_bytes(data, doc_id, max_bytes=max_bytes)


def load_bytes(data: bytes, doc_id: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Document:
    """Turn the bytes of one file into a `Document`; `doc_id` also gives the name and the type.

    `max_bytes` usually comes from the setting `loader.max-file-mb` (`int(mb * 1024 * 1024)`).
    """
    doc_id = normalize_doc_id(doc_id)
    ext = extension_or_raise(doc_id)
    data = bytes(data)
    size = len(data)
    if size > max_bytes:
        raise too_big(doc_id, size, max_bytes)
    if size == 0:
        raise LoaderError(f"{doc_id}: the file is empty (0 bytes); nothing to index")
    if ext in TEXT_EXTENSIONS:
        text, encoding = decode_text(data, doc_id)
        if not text:
            raise LoaderError(f"{doc_id}: the file contains no text, only a byte-order mark; nothing to index")
        if not text.strip():
            raise LoaderError(
                f"{doc_id}: the file contains only whitespace ({size} bytes); nothing to index"
            )
    elif ext == "pdf":
        text, encoding = pdf_text(data, doc_id), "pdf"
    else:
        text, encoding = docx_text(data, doc_id), "docx"
    return Document(
        doc_id=doc_id,
        text=text,
        file_name=doc_id.rsplit("/", 1)[-1],
        extension=ext,
        size_bytes=size,
        content_hash=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        encoding=encoding,
    )
