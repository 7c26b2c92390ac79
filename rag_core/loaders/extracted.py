"""What every extractor shares: the one result they return (`Extracted`), the declaration that registers a format
(`Format`, listed in `formats.FORMATS`), cleaning extracted text, and naming a parser's failure."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..phrases import Phrase
from ..records import Place
from .limits import TextBudget
from .options import LoadOptions

_EXTRACTED_JUNK = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


@dataclass(frozen=True)
class Extracted:
    """What an extractor read from one file, whatever its format. `load_bytes` makes the `Document` of it.

    - `text`: the document's text (LF line endings, Markdown-ish where the format has structure);
    - `encoding`: how it was read, `Document.encoding`: the text encoding found ("utf-8", "gb18030", ...) for text
      types, else the reader ("pdf", "pdf+ocr", "docx", "xlsx", "pptx", "ocr");
    - `places`: where its pages, slides or rows start (`Document.places`, sorted by offset); none for flowing text;
    - `notes`: what a person should know about the reading, as phrases (`Document.note_phrases`; their English is
      `Document.notes`): a Q&A sheet, pages without a text layer, pages read by OCR;
    - `fields`: what the reading found about the document, kept as its metadata (`Document.fields`)."""

    text: str
    encoding: str
    places: tuple[Place, ...] = ()
    notes: tuple[Phrase, ...] = ()
    fields: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # Document.fields


# (data, name, extension, budget, options) -> what was read. `name` is the doc_id (named in refusals), the extension
# is lower case without its dot; the extractor counts its text against `budget` as it reads (decompression bombs) and
# raises `LoaderError` with a code (errors.LOADER_ERROR_CODES) for a file it cannot read.
Extractor = Callable[[bytes, str, str, TextBudget, LoadOptions], Extracted]


@dataclass(frozen=True)
class Format:
    """A file format: the extensions that tell it (lower case, no dot, in the order people are shown them) and the
    extractor that reads it. Each extractor module declares its own; `formats.FORMATS` lists them."""

    extensions: tuple[str, ...]
    extract: Extractor


def clean_extracted(text: str) -> str:
    """Extracted text: LF line endings, no control characters or lone surrogates (they break hashing
    and storage and never carry meaning in extracted text)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x0b", "\n").replace("\x0c", "\n")
    return _EXTRACTED_JUNK.sub("", text).replace("\ufeff", "")


def reason(exc: Exception) -> str:
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    msg = msg[:160]
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
