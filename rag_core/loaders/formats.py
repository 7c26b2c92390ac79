"""Supported file types, told by extension, and the size limit's message."""

from __future__ import annotations

import os

from ..errors import LoaderError

SUPPORTED_EXTENSIONS: tuple[str, ...] = ("md", "markdown", "txt", "pdf", "docx")
TEXT_EXTENSIONS: frozenset[str] = frozenset({"md", "markdown", "txt"})
DEFAULT_MAX_BYTES = 50 * 1024 * 1024

_MB = 1024 * 1024
_SUPPORTED_TEXT = ", ".join("." + e for e in SUPPORTED_EXTENSIONS)


def extension(file_name: str) -> str:
    return os.path.splitext(file_name)[1][1:].lower()


def extension_or_raise(doc_id: str) -> str:
    file_name = doc_id.rsplit("/", 1)[-1]
    ext = extension(file_name)
    if not ext:
        raise LoaderError(f"{doc_id}: the file name has no extension; supported: {_SUPPORTED_TEXT}")
    if ext not in SUPPORTED_EXTENSIONS:
        raise LoaderError(f"{doc_id}: unsupported file type .{ext}; supported: {_SUPPORTED_TEXT}")
    return ext


def _mb(n: int) -> str:
    v = n / _MB
    return f"{v:.1f}".removesuffix(".0") if v >= 1 else f"{v:.2g}"


def too_big(name: str, size: int, limit: int) -> LoaderError:
    return LoaderError(
        f"{name}: the file is {_mb(size)} MB ({size:,} bytes), over the {_mb(limit)} MB limit; "
        "split it into smaller files or raise the setting loader.max-file-mb"
    )
