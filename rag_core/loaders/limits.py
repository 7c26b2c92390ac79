"""How much one document may cost: bytes read (`loader.max-file-mb`), characters of text
(`loader.max-text-chars`) and seconds (`loader.max-seconds`, checked between pages, slides and rows).

A .docx or .pdf is compressed: a few hundred KB can expand to a hundred million characters (a
"decompression bomb"). So the text limit is enforced *while* extracting: `TextBudget` counts
characters as they come and stops the extraction as soon as the limit is passed, and the markup an
extractor must parse first (DOCX XML, PDF content streams) is bounded before it is parsed, at
`MARKUP_BYTES_PER_CHAR` bytes per allowed character (at least `MIN_MARKUP_BYTES`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..errors import LoaderError

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
# 10 million characters: ~2,000 dense pages, ~12,500 chunks of 800; a minute of local embedding.
DEFAULT_MAX_TEXT_CHARS = 10_000_000
DEFAULT_MAX_SECONDS = 600.0  # OCR reads ~1 page/s on 2 cores (bench/formats.py): 200 scanned pages fit
# Markup per character of text: Word XML spends ~5-15 bytes per character (runs, properties, rsids),
# PDF content streams 1-5 (text operators, positioning). 32 leaves room for heavy formatting.
MARKUP_BYTES_PER_CHAR = 32
MIN_MARKUP_BYTES = 16 * 1024 * 1024  # a blank Word document alone holds ~0.8 MB of XML (styles)

_MB = 1024 * 1024


def mb(n: int) -> str:
    v = n / _MB
    return f"{v:.1f}".removesuffix(".0") if v >= 1 else f"{v:.2g}"


def too_big(name: str, size: int, limit: int) -> LoaderError:
    return LoaderError(
        f"{name}: the file is {mb(size)} MB ({size:,} bytes), over the {mb(limit)} MB limit; "
        "split it into smaller files or raise the setting loader.max-file-mb", code="too_large")


_ADVICE = "split it into smaller documents or raise the setting loader.max-text-chars"


def too_much_text(name: str, chars: int, limit: int) -> LoaderError:
    return LoaderError(f"{name}: the document has {chars:,} characters of text, over the {limit:,}-character "
                       f"limit; {_ADVICE}", code="too_much_text")


def markup_limit(max_text_chars: int) -> int:
    """Bytes of markup (decompressed) an extractor may parse for a document of at most `max_text_chars`."""
    return max(MIN_MARKUP_BYTES, MARKUP_BYTES_PER_CHAR * max_text_chars)


def too_much_markup(name: str, what: str, size: int, max_text_chars: int) -> LoaderError:
    return LoaderError(
        f"{name}: {what} expands to {mb(size)} MB ({size:,} bytes), more than the "
        f"{mb(markup_limit(max_text_chars))} MB "
        f"allowed for {max_text_chars:,} characters of text; it may be a decompression bomb. If the document is "
        f"genuine, {_ADVICE}", code="too_much_text")


@dataclass
class TextBudget:
    """Characters extracted so far from one document; `add` stops the extraction past the limit, `tick` when
    reading has taken longer than `seconds`."""

    name: str
    limit: int
    used: int = 0
    seconds: float = DEFAULT_MAX_SECONDS
    started: float = 0.0

    def __post_init__(self) -> None:
        self.started = self.started or time.monotonic()

    def tick(self, where: str = "") -> None:
        """Stop (raise) when reading has taken longer than allowed; `where` says how far it got."""
        elapsed = time.monotonic() - self.started
        if elapsed > self.seconds:
            at = f" (stopped at {where})" if where else ""
            raise LoaderError(f"{self.name}: reading took longer than {self.seconds:g} seconds{at}; split it into "
                              "smaller files or raise the setting loader.max-seconds", code="too_slow")

    def add(self, chars: int) -> None:
        self.used += chars
        if self.used > self.limit:
            raise self.exceeded()

    def exceeded(self) -> LoaderError:
        return LoaderError(f"{self.name}: the document holds more than {self.limit:,} characters of text "
                           f"(extraction stopped there); {_ADVICE}", code="too_much_text")

    def check(self, text: str) -> str:
        """The whole text, refused when over the limit."""
        if len(text) > self.limit:
            raise too_much_text(self.name, len(text), self.limit)
        return text
