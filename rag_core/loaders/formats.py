"""Supported file types, told by extension: the registry of formats.

A format is one module of `loaders/` that declares its extensions and its extractor (`FORMAT = Format(...)`, an
extractor returning `Extracted`), and one line in `FORMATS` below. Everything that lists the supported types (the
app's uploaders, the CLI's help, the refusals of other types, walking folders) reads them from here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import MappingProxyType

from ..errors import LoaderError
from . import html, ocr, pdf, sheets, slides, text, word
from .extracted import Format

# In the order people are shown the extensions.
FORMATS: tuple[Format, ...] = (
    text.FORMAT,        # .md .markdown .txt
    pdf.FORMAT,         # .pdf
    word.FORMAT,        # .docx
    html.FORMAT,        # .html .htm
    sheets.XLSX,        # .xlsx
    sheets.DELIMITED,   # .csv .tsv
    slides.FORMAT,      # .pptx
    ocr.FORMAT,         # .png .jpg .jpeg (read by OCR)
)


def by_extension(formats: tuple[Format, ...]) -> Mapping[str, Format]:
    """extension -> its format; an extension two formats claim is a mistake in the registry."""
    found: dict[str, Format] = {}
    for fmt in formats:
        for ext in fmt.extensions:
            if ext in found or ext != ext.lower() or ext.startswith("."):
                raise ValueError(f"format registry: .{ext} is claimed twice or is not a lower-case extension")
            found[ext] = fmt
    return MappingProxyType(found)


BY_EXTENSION: Mapping[str, Format] = by_extension(FORMATS)
SUPPORTED_EXTENSIONS: tuple[str, ...] = tuple(BY_EXTENSION)
TEXT_EXTENSIONS: frozenset[str] = frozenset(text.FORMAT.extensions)
SUPPORTED_TEXT = ", ".join("." + e for e in SUPPORTED_EXTENSIONS)


def extension(file_name: str) -> str:
    return os.path.splitext(file_name)[1][1:].lower()


def extension_or_raise(doc_id: str) -> str:
    file_name = doc_id.rsplit("/", 1)[-1]
    ext = extension(file_name)
    if not ext:
        raise LoaderError(f"{doc_id}: the file name has no extension; supported: {SUPPORTED_TEXT}", code="unsupported")
    if ext not in BY_EXTENSION:
        raise LoaderError(f"{doc_id}: unsupported file type .{ext}; supported: {SUPPORTED_TEXT}", code="unsupported")
    return ext
