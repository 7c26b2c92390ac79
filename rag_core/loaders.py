"""Bytes + a name -> `Document`: document ids, text decoding (UTF-8/16/32, GB18030, Big5, ...), PDF, DOCX.

Document ids
------------
A document's id (`doc_id`) is its path relative to the knowledge base, with `/` separators, e.g.
`runbooks/cpu_high.md`. It is the identity used to replace and delete a document, so the same file
must get the same id however it arrives:

* folder ingestion: the path relative to the folder that was ingested — `kb/runbooks/cpu_high.md`
  ingested from `kb` is `runbooks/cpu_high.md`;
* a single file (CLI path or upload) without a folder: its file name, `cpu_high.md`;
* an optional `prefix` folder is put in front, so an upload of `cpu_high.md` with folder `runbooks`
  chosen in the UI is `runbooks/cpu_high.md` too — the same document as the folder ingestion above.

`normalize_doc_id` makes ids canonical (backslashes become `/`, `./` and `//` collapse, Unicode NFC,
surrounding whitespace stripped) and refuses ids that could point outside the knowledge base or are
unusable as names (absolute paths, `..`, control characters, empty, over 512 UTF-8 bytes).

Text files
----------
Decoded in this order: byte-order mark (UTF-8, UTF-16, UTF-32); strict UTF-8; then legacy encodings.
charset-normalizer alone is unreliable on short Chinese text (it calls GBK "big5") and on Western
single-byte text, so GB18030 and Big5 are tried strictly here and judged by how many of the decoded
characters are common Chinese characters. See `_decode_legacy` for the full rule.
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import io
import os
import re
import stat
import unicodedata
from pathlib import Path
from typing import Sequence

from .errors import LoaderError
from .records import Document

SUPPORTED_EXTENSIONS: tuple[str, ...] = ("md", "markdown", "txt", "pdf", "docx")
TEXT_EXTENSIONS: frozenset[str] = frozenset({"md", "markdown", "txt"})
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
MAX_DOC_ID_BYTES = 512

_MB = 1024 * 1024
_SUPPORTED_TEXT = ", ".join("." + e for e in SUPPORTED_EXTENSIONS)


# --------------------------------------------------------------------------------------------------
# Document ids


def normalize_doc_id(raw: str) -> str:
    """Return the canonical doc_id for a relative path, or raise `LoaderError` saying why not."""
    shown = _display(raw)
    if "\x00" in raw:
        raise LoaderError(f"{shown}: the file name contains a NUL byte; rename the file")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in raw):
        # What os.fsdecode makes of file-name bytes that are not UTF-8.
        raise LoaderError(f"{shown}: the file name is not valid UTF-8; rename the file")
    name = unicodedata.normalize("NFC", raw.strip())
    if not name:
        raise LoaderError("the file name is empty; give the document a name such as runbooks/cpu_high.md")
    for c in name:
        if unicodedata.category(c) == "Cc":
            raise LoaderError(
                f"{shown}: the file name contains a control character (U+{ord(c):04X}); rename the file"
            )
        if c in _BIDI_CONTROLS:
            # Right-to-left overrides make "exe.md" display as something else: a spoofing trick.
            raise LoaderError(
                f"{shown}: the file name contains an invisible text-direction control "
                f"(U+{ord(c):04X}); rename the file"
            )
    name = name.replace("\\", "/")
    if name.startswith("/") or re.match(r"[A-Za-z]:", name):
        raise LoaderError(
            f"{shown}: absolute paths are not allowed as document ids; use a path relative to the "
            "knowledge base, e.g. runbooks/cpu_high.md"
        )
    if name.endswith("/"):
        raise LoaderError(f"{shown}: the name ends with a slash, so it names a folder, not a file")
    parts: list[str] = []
    for seg in name.split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            raise LoaderError(
                f"{shown}: '..' is not allowed in a document id (it would point outside the "
                "knowledge base); use a path inside it"
            )
        if seg.strip(". ") == "":
            # Windows drops trailing dots and spaces, so "... " can behave like ".." there.
            raise LoaderError(f"{shown}: '{seg}' is not a usable folder or file name (only dots and spaces)")
        parts.append(seg)
    if not parts:
        raise LoaderError(f"{shown}: the file name is empty; give the document a name such as notes.md")
    doc_id = "/".join(parts)
    size = len(doc_id.encode("utf-8"))
    if size > MAX_DOC_ID_BYTES:
        raise LoaderError(
            f"{shown}: the document id is {size} bytes long (UTF-8), over the {MAX_DOC_ID_BYTES}-byte "
            "limit; use shorter folder or file names"
        )
    return doc_id


def doc_id_for(path: Path, root: Path | None, prefix: str = "") -> str:
    """The doc_id of `path`: relative to `root` when a folder was ingested, else the file name.

    `prefix` (a folder such as "runbooks", e.g. chosen in the upload UI) is put in front, so
    `doc_id_for(Path("cpu_high.md"), None, "runbooks")` (an upload) and
    `doc_id_for(Path("kb/runbooks/cpu_high.md"), Path("kb"))` (a folder) are both
    "runbooks/cpu_high.md". Symlinks are not resolved: the id follows the path as seen in the folder.
    """
    path = Path(path)
    if root is None:
        rel = path.name
    else:
        abs_path = Path(os.path.abspath(path))
        abs_root = Path(os.path.abspath(root))
        try:
            rel = abs_path.relative_to(abs_root).as_posix()
        except ValueError:
            raise LoaderError(
                f"{path}: the file is not inside the folder being ingested ({root})"
            ) from None
        if rel == ".":
            raise LoaderError(f"{path}: this is the ingested folder itself, not a file inside it")
    prefix = prefix.strip().strip("/\\")
    return normalize_doc_id(f"{prefix}/{rel}" if prefix else rel)


# --------------------------------------------------------------------------------------------------
# Loading


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
    _extension_or_raise(doc_id)
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
        raise _too_big(str(path), st.st_size, max_bytes)
    try:
        with path.open("rb") as fh:
            data = fh.read(max_bytes + 1)  # +1: notice a file that grew after stat()
    except PermissionError:
        raise LoaderError(f"{path}: permission denied; check the file's permissions") from None
    except OSError as exc:
        raise LoaderError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise _too_big(str(path), len(data), max_bytes)
    return load_bytes(data, doc_id, max_bytes=max_bytes)


def load_bytes(data: bytes, doc_id: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Document:
    """Turn the bytes of one file into a `Document`; `doc_id` also gives the name and the type.

    `max_bytes` usually comes from the setting `loader.max-file-mb` (`int(mb * 1024 * 1024)`).
    """
    doc_id = normalize_doc_id(doc_id)
    ext = _extension_or_raise(doc_id)
    data = bytes(data)
    size = len(data)
    if size > max_bytes:
        raise _too_big(doc_id, size, max_bytes)
    if size == 0:
        raise LoaderError(f"{doc_id}: the file is empty (0 bytes); nothing to index")
    if ext in TEXT_EXTENSIONS:
        text, encoding = _decode_text(data, doc_id)
        if not text:
            raise LoaderError(f"{doc_id}: the file contains no text, only a byte-order mark; nothing to index")
        if not text.strip():
            raise LoaderError(
                f"{doc_id}: the file contains only whitespace ({size} bytes); nothing to index"
            )
    elif ext == "pdf":
        text, encoding = _pdf_text(data, doc_id), "pdf"
    else:
        text, encoding = _docx_text(data, doc_id), "docx"
    return Document(
        doc_id=doc_id,
        text=text,
        file_name=doc_id.rsplit("/", 1)[-1],
        extension=ext,
        size_bytes=size,
        content_hash=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        encoding=encoding,
    )


def iter_files(paths: Sequence[Path]) -> list[tuple[Path, Path | None]]:
    """Expand files and folders into (file, root) pairs, in a deterministic order.

    Folders are walked recursively; their files come sorted by relative path, paired with the folder
    as root. Inside folders, hidden entries (".git", ".DS_Store"), Office lock files ("~$x.docx"),
    unsupported types and symlinked folders are skipped. A file named explicitly is always kept
    (root None), even with an unsupported type, so the caller reports it as failed instead of
    silently ignoring it. A path listed twice, or a file also found in a listed folder, appears once.
    """
    given = [Path(p) for p in paths]
    missing = [str(p) for p in given if not p.exists() and not p.is_symlink()]
    if missing:
        raise LoaderError(f"no such file or folder: {', '.join(missing)}; check the path")
    out: list[tuple[Path, Path | None]] = []
    seen: set[str] = set()

    def add(file: Path, root: Path | None) -> None:
        key = os.path.abspath(file)
        if key not in seen:
            seen.add(key)
            out.append((file, root))

    for p in given:
        if p.is_dir():
            for f in _walk(p):
                add(f, p)
        else:
            add(p, None)
    return out


def _walk(root: Path) -> list[Path]:
    def fail(err: OSError) -> None:
        raise LoaderError(f"{err.filename}: cannot list this folder ({err.strerror}); check its permissions")

    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=fail):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for fn in filenames:
            if fn.startswith((".", "~$")):
                continue
            if _extension(fn) in SUPPORTED_EXTENSIONS:
                found.append(Path(dirpath) / fn)
    found.sort(key=lambda f: f.relative_to(root).parts)
    return found


# --------------------------------------------------------------------------------------------------
# Small helpers


_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _display(raw: str, limit: int = 120) -> str:
    shown = "".join(c if c.isprintable() or c == " " else f"\\x{ord(c):02x}" if ord(c) < 256
                    else f"\\u{ord(c):04x}" for c in raw)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _extension(file_name: str) -> str:
    return os.path.splitext(file_name)[1][1:].lower()


def _extension_or_raise(doc_id: str) -> str:
    file_name = doc_id.rsplit("/", 1)[-1]
    ext = _extension(file_name)
    if not ext:
        raise LoaderError(f"{doc_id}: the file name has no extension; supported: {_SUPPORTED_TEXT}")
    if ext not in SUPPORTED_EXTENSIONS:
        raise LoaderError(f"{doc_id}: unsupported file type .{ext}; supported: {_SUPPORTED_TEXT}")
    return ext


def _mb(n: int) -> str:
    v = n / _MB
    return f"{v:.1f}".removesuffix(".0") if v >= 1 else f"{v:.2g}"


def _too_big(name: str, size: int, limit: int) -> LoaderError:
    return LoaderError(
        f"{name}: the file is {_mb(size)} MB ({size:,} bytes), over the {_mb(limit)} MB limit; "
        "split it into smaller files or raise the setting loader.max-file-mb"
    )


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


# --------------------------------------------------------------------------------------------------
# Text decoding


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
    (b"PK\x03\x04", "a ZIP package (.docx, .xlsx, .zip)", "if it is a Word document, rename it to .docx"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Office file (.doc, .xls) or an encrypted Office file",
     "save it as .docx without a password"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image", ""),
    (b"\xff\xd8\xff", "a JPEG image", ""),
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
# The same in decoded text, plus C1 controls, which no real text contains.
_TEXT_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f-\x9f]")
_BINARY_CONTROL_SHARE = 0.01  # more than 1% control characters: not text
_SAMPLE = 65536


def _not_text(name: str, what: str, advice: str = "") -> LoaderError:
    advice = advice or "only text (.md, .markdown, .txt), .pdf and .docx files can be indexed"
    return LoaderError(f"{name}: looks like a binary file ({what}), not text; {advice}")


def _check_controls(sample: str, pattern: re.Pattern[str], name: str) -> None:
    if not sample:
        return
    count = len(pattern.findall(sample))
    if count and count / len(sample) > _BINARY_CONTROL_SHARE:
        raise _not_text(name, f"{count} control characters in the first {len(sample):,}")


def _decode_text(data: bytes, name: str) -> tuple[str, str]:
    for magic, what, advice in _MAGIC:
        if data.startswith(magic):
            raise _not_text(name, what, advice)
    for bom, codec, label in _BOMS:
        if data.startswith(bom):
            unicode_name = label.upper().removesuffix("-SIG")
            try:
                text = data.decode(codec)
            except UnicodeDecodeError as exc:
                raise LoaderError(
                    f"{name}: starts with a {unicode_name} byte-order mark but is not valid "
                    f"{unicode_name} (bad bytes at offset {exc.start}); re-save the file as UTF-8"
                ) from None
            if _junk_share(text[:_SAMPLE]) > _JUNK_SHARE:
                raise LoaderError(
                    f"{name}: starts with a {unicode_name} byte-order mark but does not decode to text "
                    "(unassigned or private-use characters); it is probably a binary file"
                )
            break
    else:
        if b"\x00" in data:
            text, label = _bomless_utf16(data, name)
        else:
            _check_controls(data[:_SAMPLE].decode("latin-1"), _RAW_CONTROL, name)
            try:
                text, label = data.decode("utf-8"), "utf-8"
            except UnicodeDecodeError as exc:
                text, label = _decode_legacy(data, name, exc)
    _check_controls(text[:_SAMPLE], _TEXT_CONTROL, name)
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    return text, label


def _bomless_utf16(data: bytes, name: str) -> tuple[str, str]:
    """UTF-16 without a byte-order mark shows as NUL in every other byte of ASCII-range text."""
    sample = data[: _SAMPLE - _SAMPLE % 2]
    half = len(sample) // 2
    even_nul, odd_nul = sample[0::2].count(0), sample[1::2].count(0)
    codec = ""
    if len(data) % 2 == 0 and half:
        if odd_nul >= 0.3 * half and even_nul <= 0.01 * half:
            codec = "utf-16-le"
        elif even_nul >= 0.3 * half and odd_nul <= 0.01 * half:
            codec = "utf-16-be"
    if codec:
        try:
            text = data.decode(codec)
        except UnicodeDecodeError:
            pass
        else:
            if _junk_share(text[:_SAMPLE]) <= _JUNK_SHARE:
                return text, codec
    raise _not_text(name, "it contains NUL bytes")


_JUNK_SHARE = 0.02


def _junk_share(sample: str) -> float:
    """Share of unassigned, private-use and surrogate code points: ~0 in text, high in binary
    data read as UTF-16/32."""
    if not sample:
        return 0.0
    junk = sum(1 for c in sample if ord(c) >= 0x80 and unicodedata.category(c) in ("Cn", "Co", "Cs"))
    return junk / len(sample)


def _decode_legacy(data: bytes, name: str, utf8_error: UnicodeDecodeError) -> tuple[str, str]:
    """Decode bytes that are not UTF-8. The rule, in order:

    1. Almost UTF-8 (many valid multi-byte sequences, a few broken ones): refuse and say where, rather
       than decode the whole file as something else and index mojibake.
    2. Korean (EUC-KR/CP949): GB2312 and EUC-KR share byte ranges, so common Chinese characters
       read as EUC-KR are valid Hangul too. Korean wins only with >= 8 Hangul syllables making up
       >= 80% of the non-ASCII characters, >= 20% of them particles or endings. Shorter Korean text
       (a title) is indistinguishable from Chinese and reads as Chinese: this is a Chinese-first tool.
    3. Chinese: GB18030 (superset of GBK and GB2312) and Big5 (CP950 as fallback), each decoded
       strictly and scored by `_chinese_score`; the best wins when it scores >= 0.6, GB18030 on a tie.
       Measured on sentences from examples/: right for every GBK and Big5 sample of 4+ characters;
       1-2 character Big5 strings that are also common GB characters read as GB18030.
    4. Western (Windows-1252), judged by `_western_plausible`: charset-normalizer guesses cp1250,
       cp775 or mac_latin2 for plain French, so this comes before it.
    5. charset-normalizer for anything else (Cyrillic, Japanese, Greek, ...), given at least 32
       non-ASCII bytes: on less it calls almost any bytes some Cyrillic code page.
    """
    bad_at = utf8_error.start
    broken, valid_multibyte = _utf8_damage(data)
    if valid_multibyte >= 20 and broken * 50 <= valid_multibyte:
        raise LoaderError(
            f"{name}: the file is UTF-8 except for {broken} invalid byte sequence{'s' if broken > 1 else ''}, "
            f"the first at line {_line_of(data, bad_at)} (byte {bad_at}); fix those characters or re-save "
            "the file as UTF-8"
        )

    korean = _strict(data, "euc-kr") or _strict(data, "cp949")
    if korean is not None:
        text, codec = korean
        non_ascii = [c for c in text[:_SAMPLE] if ord(c) >= 0x80]
        hangul = [c for c in non_ascii if "\uac00" <= c <= "\ud7a3"]
        particles = sum(1 for c in hangul if c in _KOREAN_PARTICLES)
        if len(hangul) >= 8 and len(hangul) >= 0.8 * len(non_ascii) and particles >= 0.2 * len(hangul):
            return text, codec

    chinese: list[tuple[float, str, str]] = []
    for codecs_to_try in (("gb18030",), ("big5", "cp950")):
        for codec in codecs_to_try:
            decoded = _strict(data, codec)
            if decoded is not None:
                chinese.append((_chinese_score(decoded[0]), decoded[0], codec))
                break
    if chinese:
        score, text, codec = max(chinese, key=lambda c: c[0])  # max keeps the first (GB18030) on a tie
        if score >= 0.6:
            return text, codec

    western = _strict(data, "cp1252")
    if western is not None and _western_plausible(western[0]):
        return western

    if sum(1 for b in data[:_SAMPLE] if b >= 0x80) >= 32:
        # Below that charset-normalizer will call almost any bytes some Cyrillic code page.
        guess = _charset_normalizer(data)
        if guess is not None:
            return guess

    raise LoaderError(
        f"{name}: the text is not UTF-8 (first invalid byte at line {_line_of(data, bad_at)}) and its "
        "encoding could not be recognised (tried GB18030/GBK, Big5, Windows-1252 and automatic "
        "detection); re-save the file as UTF-8"
    )


# Korean particles and verb endings (이 가 는 을 를 의 에 로 ... 다 니 습): 23-45% of the syllables
# of real Korean sentences, under 15% of Chinese read as EUC-KR (0 from 20 characters on).
_KOREAN_PARTICLES = frozenset("이다는의에을를하고가지로한서기도니습있으은어게해들")


def _strict(data: bytes, codec: str) -> tuple[str, str] | None:
    try:
        return data.decode(codec), codec
    except UnicodeDecodeError:
        return None


def _utf8_damage(data: bytes) -> tuple[int, int]:
    """(invalid sequences, valid multi-byte characters) in the first MB, read as UTF-8."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text = decoder.decode(data[:_MB], final=len(data) <= _MB)
    broken = text.count("\ufffd")
    valid = len(re.findall(r"[^\x00-\x7f\ufffd]", text))
    return broken, valid


@functools.cache
def _common_hanzi() -> frozenset[str]:
    """GB2312 level 1 (3755 most used simplified) plus Big5 level 1 (5401 most used traditional)."""
    chars: set[str] = set()
    for lead in range(0xB0, 0xD8):
        for trail in range(0xA1, 0xFF):
            try:
                chars.add(bytes((lead, trail)).decode("gb2312"))
            except UnicodeDecodeError:
                pass
    for lead in range(0xA4, 0xC7):
        for trail in (*range(0x40, 0x7F), *range(0xA1, 0xFF)):
            if lead == 0xC6 and trail > 0x7E:  # level 1 ends at C67E
                break
            try:
                chars.add(bytes((lead, trail)).decode("big5"))
            except UnicodeDecodeError:
                pass
    return frozenset(chars)


def _is_cjk_punctuation(o: int) -> bool:
    return (
        0x3000 <= o <= 0x303F  # 、。「」《》【】
        or 0xFF00 <= o <= 0xFFEF  # full-width forms ：，（）
        or 0x2000 <= o <= 0x206F  # — … “ ” ‘ ’
        or 0x20A0 <= o <= 0x20CF  # €
        or 0x2100 <= o <= 0x22FF  # ℃ → ≤ ×
        or 0x2460 <= o <= 0x24FF  # ①
        or o in (0xB0, 0xB7, 0xD7, 0xF7)  # ° · × ÷
    )


def _chinese_score(text: str) -> float:
    """How much `text` looks like correctly decoded Chinese, from -3 to 1, over non-ASCII characters.

    +1 for a common hanzi or CJK/typographic punctuation, 0 for other characters (rare hanzi, Greek,
    box drawing), -3 for what a wrong guess produces: private-use and unassigned code points, U+FFFD,
    C1 controls, and kana (Big5 read as GB18030 turns the most common characters into kana).
    """
    common = _common_hanzi()
    good = bad = total = 0
    for ch in text[: 4 * _SAMPLE]:
        o = ord(ch)
        if o < 0x80:
            continue
        total += 1
        if ch in common or _is_cjk_punctuation(o):
            good += 1
        elif (
            0xE000 <= o <= 0xF8FF
            or o >= 0xF0000
            or o == 0xFFFD
            or 0x80 <= o <= 0x9F
            or 0x3040 <= o <= 0x30FF
            or unicodedata.category(ch) == "Cn"
        ):
            bad += 1
    return (good - 3 * bad) / total if total else 0.0


_WESTERN_LETTERS = frozenset(
    "ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖØÙÚÛÜÝÞßàáâãäåæçèéêëìíîïðñòóôõöøùúûüýþÿŒœŠšŽžŸ"
)
_WESTERN_SYMBOLS = frozenset("‘’‚“”„–—…•€£¥¢©®™°±²³¹½¼¾«»‹›¿¡§¶·×÷\u00a0")


def _western_plausible(text: str) -> bool:
    """True when every non-ASCII character is a Western letter or symbol and most accented letters
    sit next to an ASCII letter ("café", "Größe"). Chinese or Cyrillic read as Windows-1252 gives
    runs of accented letters and symbols instead."""
    sample = text[: 4 * _SAMPLE]
    letters = attached = 0
    for i, ch in enumerate(sample):
        if ord(ch) < 0x80:
            continue
        if ch in _WESTERN_SYMBOLS:
            continue
        if ch not in _WESTERN_LETTERS:
            return False
        letters += 1
        before = sample[i - 1] if i else ""
        after = sample[i + 1] if i + 1 < len(sample) else ""
        if (before.isascii() and before.isalpha()) or (after.isascii() and after.isalpha()):
            attached += 1
    return letters == 0 or attached >= 0.7 * letters


def _charset_normalizer(data: bytes) -> tuple[str, str] | None:
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None:
        return None
    codec = best.encoding.replace("_", "-")
    # UTF-16/32 (BOM or NUL pattern), Chinese and Korean were judged already with better rules; the
    # same families guessed here are mojibake.
    if codec.startswith(("utf", "gb", "big5", "cp950", "hz", "euc-kr", "cp949", "johab", "iso2022-kr")):
        return None
    text = str(best)
    if "\ufffd" in text or _TEXT_CONTROL.search(text[:_SAMPLE]):
        return None
    return text, codec


# --------------------------------------------------------------------------------------------------
# PDF and DOCX


_EXTRACTED_JUNK = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def _clean_extracted(text: str) -> str:
    """Extracted text: LF line endings, no control characters or lone surrogates (they break hashing
    and storage and never carry meaning in extracted text)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x0b", "\n").replace("\x0c", "\n")
    return _EXTRACTED_JUNK.sub("", text).replace("\ufeff", "")


def _reason(exc: Exception) -> str:
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    msg = msg[:160]
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def _pdf_text(data: bytes, name: str) -> str:
    if b"%PDF-" not in data[:1024]:
        raise LoaderError(
            f"{name}: is not a PDF file (no %PDF- header); it may be another type of file renamed to .pdf"
        )
    from pypdf import PdfReader
    from pypdf.errors import DependencyError

    pages: list[str] = []
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")  # many PDFs only have an owner password
            except DependencyError:
                raise LoaderError(
                    f"{name}: the PDF is encrypted with AES and the 'cryptography' package is not "
                    "installed; install it, or remove the PDF's encryption"
                ) from None
            if not opened:
                raise LoaderError(
                    f"{name}: the PDF is password-protected; remove the password (for example print "
                    "it to a new PDF) and upload it again"
                )
        for page in reader.pages:
            page_text = _clean_extracted(page.extract_text() or "").strip()
            if page_text:
                pages.append(page_text)
    except LoaderError:
        raise
    except Exception as exc:  # pypdf raises many exception types on damaged files
        raise LoaderError(
            f"{name}: could not read the PDF ({_reason(exc)}); the file may be damaged: open it and "
            "save or export it again"
        ) from exc
    if not pages:
        raise LoaderError(f"{name}: no extractable text (scanned PDF? run OCR first)")
    return "\n\n".join(pages)


_HEADING_STYLE = re.compile(r"^(?:heading|标题)\s*([1-9])$", re.IGNORECASE)
_TITLE_STYLES = frozenset({"title", "标题"})


def _docx_text(data: bytes, name: str) -> str:
    if data.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        raise LoaderError(
            f"{name}: is an old Word .doc file or a password-protected document, not a .docx; "
            "open it in Word and save it as .docx without a password"
        )
    if not data.startswith(b"PK"):
        raise LoaderError(
            f"{name}: is not a valid .docx file (a .docx is a ZIP package); it may be another type of "
            "file renamed to .docx, or damaged"
        )
    try:
        import docx
        from docx.table import Table

        document = docx.Document(io.BytesIO(data))
        blocks: list[str] = []
        for item in document.iter_inner_content():
            block = _docx_table(item) if isinstance(item, Table) else _docx_paragraph(item)
            if block:
                blocks.append(block)
    except Exception as exc:  # python-docx / zipfile / lxml raise many types on damaged files
        raise LoaderError(
            f"{name}: could not read the Word document ({_reason(exc)}); the file may be damaged: "
            "open it in Word and save it again as .docx"
        ) from exc
    text = _clean_extracted("\n\n".join(blocks))
    if not text.strip():
        raise LoaderError(f"{name}: the Word document has no text; nothing to index")
    return text


def _style_names(paragraph: object) -> list[str]:
    """The paragraph's style name and those it is based on (a custom style based on Heading 2 is a
    heading too), lower-cased."""
    names: list[str] = []
    style = getattr(paragraph, "style", None)
    for _ in range(6):
        if style is None:
            break
        names.append((style.name or "").strip().lower())
        style = style.base_style
    return names


def _docx_paragraph(paragraph: object) -> str:
    text: str = paragraph.text  # type: ignore[attr-defined]
    if not text.strip():
        return ""
    for style in _style_names(paragraph):
        m = _HEADING_STYLE.match(style)
        if m or style in _TITLE_STYLES:
            level = min(int(m.group(1)), 6) if m else 1
            return "#" * level + " " + " ".join(text.split())
        if style.startswith("list bullet"):
            return "- " + text.strip()
        if style.startswith("list number"):
            return "1. " + text.strip()
    p_pr = paragraph._p.pPr  # type: ignore[attr-defined]
    if p_pr is not None and p_pr.numPr is not None:
        return "- " + text.strip()  # numbered or bulleted via numbering.xml; the marker is not in the text
    return text


def _docx_table(table: object) -> str:
    rows: list[str] = []
    for row in table.rows:  # type: ignore[attr-defined]
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            if previous is not None and cell._tc is previous:  # a merged cell repeats per grid column
                continue
            previous = cell._tc
            cells.append(" ".join(cell.text.split()))
        if any(cells):
            rows.append(" | ".join(cells))
    return "\n".join(rows)
