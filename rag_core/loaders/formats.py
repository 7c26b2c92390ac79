"""Supported file types, told by extension."""

from __future__ import annotations

import os

from ..errors import LoaderError

SUPPORTED_EXTENSIONS: tuple[str, ...] = (
    "md", "markdown", "txt", "pdf", "docx", "html", "htm", "xlsx", "csv", "tsv", "pptx", "png", "jpg", "jpeg")
TEXT_EXTENSIONS: frozenset[str] = frozenset({"md", "markdown", "txt"})
HTML_EXTENSIONS: frozenset[str] = frozenset({"html", "htm"})
TABLE_EXTENSIONS: frozenset[str] = frozenset({"csv", "tsv"})  # delimited text; .xlsx is a package
IMAGE_EXTENSIONS: frozenset[str] = frozenset({"png", "jpg", "jpeg"})  # read by OCR
SUPPORTED_TEXT = ", ".join("." + e for e in SUPPORTED_EXTENSIONS)


def extension(file_name: str) -> str:
    return os.path.splitext(file_name)[1][1:].lower()


def extension_or_raise(doc_id: str) -> str:
    file_name = doc_id.rsplit("/", 1)[-1]
    ext = extension(file_name)
    if not ext:
        raise LoaderError(f"{doc_id}: the file name has no extension; supported: {SUPPORTED_TEXT}", code="unsupported")
    if ext not in SUPPORTED_EXTENSIONS:
        raise LoaderError(f"{doc_id}: unsupported file type .{ext}; supported: {SUPPORTED_TEXT}", code="unsupported")
    return ext
