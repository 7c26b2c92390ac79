"""What PDF and DOCX extraction share: cleaning extracted text, and naming a parser's failure."""

from __future__ import annotations

import re

_EXTRACTED_JUNK = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def clean_extracted(text: str) -> str:
    """Extracted text: LF line endings, no control characters or lone surrogates (they break hashing
    and storage and never carry meaning in extracted text)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x0b", "\n").replace("\x0c", "\n")
    return _EXTRACTED_JUNK.sub("", text).replace("\ufeff", "")


def reason(exc: Exception) -> str:
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    msg = msg[:160]
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
