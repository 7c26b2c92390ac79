"""Text files (.md, .markdown, .txt): decoding their bytes, and refusing what is not text. `decode_text` also
decodes the text inside other formats (HTML, CSV).

Decoded in this order: byte-order mark (UTF-8, UTF-16, UTF-32); strict UTF-8; then legacy encodings
(`legacy.decode_legacy`). Data with a NUL byte is binary unless a byte-order mark declares UTF-16/32.
Known binary formats (by magic bytes) and data with many control characters are refused with a
message saying what the file seems to be.
"""

from __future__ import annotations

import codecs
import re
import unicodedata

from ..errors import LoaderError
from .extracted import Extracted, Format
from .legacy import SAMPLE, TEXT_CONTROL, decode_legacy
from .limits import TextBudget
from .options import LoadOptions

_BOMS: tuple[tuple[bytes, str, str], ...] = (
    # UTF-32 first: its little-endian BOM starts with the UTF-16 one.
    (codecs.BOM_UTF32_LE, "utf-32", "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32", "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig", "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16", "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16", "utf-16"),
)

# (magic bytes, what it is, what to do). Checked only for text types.
_MAGIC: tuple[tuple[bytes, str, str], ...] = (
    (b"%PDF-", "a PDF file", "rename it to .pdf"),
    (b"PK\x03\x04", "a ZIP package (.docx, .xlsx, .pptx, .zip)",
     "if it is an Office document, rename it to .docx, .xlsx or .pptx after what it is"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Office file (.doc, .xls) or an encrypted Office file",
     "save it as .docx without a password"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image", "rename it to .png (images are read by OCR)"),
    (b"\xff\xd8\xff", "a JPEG image", "rename it to .jpg (images are read by OCR)"),
    (b"GIF87a", "a GIF image", ""),
    (b"GIF89a", "a GIF image", ""),
    (b"\x7fELF", "an ELF executable", ""),
    (b"\x1f\x8b", "a gzip archive", ""),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", ""),
    (b"Rar!\x1a\x07", "a RAR archive", ""),
    (b"SQLite format 3\x00", "an SQLite database", ""),
)

# C0 controls other than \t \n \v \f \r and ESC (ANSI colours in logs), plus DEL.
_RAW_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")
_BINARY_CONTROL_SHARE = 0.01  # more than 1% control characters: not text


class NotText(LoaderError):
    """Bytes that are not text (code "binary"): what they look like, and what to do. Without advice of its own the
    refusal names the file types that can be read, which are the registry's (`formats`, which imports this module):
    `load_bytes` turns it into that refusal (`naming`)."""

    def __init__(self, name: str, what: str, advice: str = "") -> None:
        self.name, self.what, self.advice = name, what, advice
        super().__init__(self._message(), code="binary")

    def _message(self, types: str = "") -> str:
        advice = self.advice or "it cannot be read as text" + (f"; supported file types: {types}" if types else "")
        return f"{self.name}: looks like a binary file ({self.what}), not text; {advice}"

    def naming(self, types: str) -> LoaderError:
        """The refusal as people get it: its advice names the file types that can be read (`formats.SUPPORTED_TEXT`)
        unless it has a more precise one."""
        return LoaderError(self._message(types), code="binary")


def _check_controls(sample: str, pattern: re.Pattern[str], name: str) -> None:
    if not sample:
        return
    count = len(pattern.findall(sample))
    if count and count / len(sample) > _BINARY_CONTROL_SHARE:
        raise NotText(name, f"{count} control characters in the first {len(sample):,}")


def plain_text(data: bytes, name: str, _ext: str, _budget: TextBudget, _options: LoadOptions) -> Extracted:
    """A text file's text and the encoding it was decoded from; refused when it holds nothing to index."""
    text, encoding = decode_text(data, name)
    if not text:
        raise LoaderError(f"{name}: the file contains no text, only a byte-order mark; nothing to index", code="empty")
    if not text.strip():
        raise LoaderError(f"{name}: the file contains only whitespace ({len(data)} bytes); nothing to index",
                          code="empty")
    return Extracted(text, encoding)


FORMAT = Format(("md", "markdown", "txt"), plain_text)


def decode_text(data: bytes, name: str) -> tuple[str, str]:
    """(text, encoding) of bytes that should be text; `NotText` (code "binary") when they are not."""
    for magic, what, advice in _MAGIC:
        if data.startswith(magic):
            raise NotText(name, what, advice)
    for bom, codec, label in _BOMS:
        if data.startswith(bom):
            unicode_name = label.upper().removesuffix("-SIG")
            try:
                text = data.decode(codec)
            except UnicodeDecodeError as exc:
                raise LoaderError(
                    f"{name}: starts with a {unicode_name} byte-order mark but is not valid "
                    f"{unicode_name} (bad bytes at offset {exc.start}); re-save the file as UTF-8",
                    code="undecodable") from None
            if _junk_share(text[:SAMPLE]) > _JUNK_SHARE:
                raise LoaderError(
                    f"{name}: starts with a {unicode_name} byte-order mark but does not decode to text "
                    "(unassigned or private-use characters); it is probably a binary file", code="binary")
            break
    else:
        if b"\x00" in data:
            # No text contains NUL. UTF-16/32 do, but they must say so with a byte-order mark: guessing
            # them from a NUL pattern read ASCII-with-NULs as UTF-16 and indexed it as nonsense CJK.
            raise NotText(name, "it contains NUL bytes and no byte-order mark declares UTF-16 or UTF-32",
                            "if it is UTF-16 or UTF-32 text, save it as UTF-8 or with a byte-order mark")
        _check_controls(data[:SAMPLE].decode("latin-1"), _RAW_CONTROL, name)
        try:
            text, label = data.decode("utf-8"), "utf-8"
        except UnicodeDecodeError as exc:
            text, label = decode_legacy(data, name, exc)
    _check_controls(text[:SAMPLE], TEXT_CONTROL, name)
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    return text, label


_JUNK_SHARE = 0.02


def _junk_share(sample: str) -> float:
    """Share of unassigned, private-use and surrogate code points: ~0 in text, high in binary
    data read as UTF-16/32."""
    if not sample:
        return 0.0
    junk = sum(1 for c in sample if ord(c) >= 0x80 and unicodedata.category(c) in ("Cn", "Co", "Cs"))
    return junk / len(sample)
