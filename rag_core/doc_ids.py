"""Document ids: the path of a document inside the knowledge base, canonical and safe.

A document's id (`doc_id`) is its path relative to the knowledge base, with `/` separators, e.g.
`runbooks/cpu_high.md`. It is the identity used to replace and delete a document, so the same file
must get the same id however it arrives:

* folder ingestion: the path relative to the folder that was ingested — `kb/runbooks/cpu_high.md`
  ingested from `kb` is `runbooks/cpu_high.md`;
* a single file (CLI path or upload) without a folder: its file name, `cpu_high.md`;
* an optional `prefix` folder is put in front, so an upload of `cpu_high.md` with folder `runbooks`
  chosen in the UI is `runbooks/cpu_high.md` too — the same document as the folder ingestion above.

`normalize_doc_id` makes ids canonical (backslashes become `/`, `./` and `//` collapse, Unicode NFKC,
invisible format characters removed, surrounding whitespace stripped) and refuses ids that could point
outside the knowledge base or are unusable as names (absolute paths, Windows drive paths, `..`, control
characters, text-direction controls, empty, over 512 UTF-8 bytes). It is the one normalisation for every
doc_id a person types too (`delete`, `reindex DOC_ID`, API paths): any spelling of a path (`back\\slash.md`,
`./a.md`, `a//b.md`, NFD accents) names the document ingest created from it.

Names that read the same are one id: NFKC folds compatibility look-alikes (a fullwidth slash `／` is `/`, so
`a／b.md` is the file b.md in folder a; fullwidth letters and digits are ASCII; `（` is `(`), and format
characters nobody sees (zero-width space, BOM, soft hyphen, word joiner: Unicode category Cf) are dropped, so
`x\u200b.md` is `x.md`. A zero-width joiner between two emoji (`👩\u200d💻`) and the tags of a flag emoji are
kept: they are part of what is drawn. Text-direction controls are refused instead (they make `exe.md` read as
something else). Earlier releases normalised to NFC only; `legacy_doc_id` is that rule, so a document indexed
under it keeps its id (ingest.Ingestor replaces it rather than adding a look-alike twin).

`join_doc_id` puts a folder (`--prefix`, the upload page's folder box) in front of a name.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

from .errors import LoaderError
from .text import display

MAX_DOC_ID_BYTES = 512
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def normalize_doc_id(raw: str, *, fold: bool = True) -> str:
    """Return the canonical doc_id for a relative path, or raise `LoaderError` saying why not. `fold` False: the
    rule of earlier releases (NFC, format characters kept), see `legacy_doc_id`."""
    shown = display(raw)
    if "\x00" in raw:
        raise _bad_name(f"{shown}: the file name contains a NUL byte; rename the file")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in raw):
        # What os.fsdecode makes of file-name bytes that are not UTF-8.
        raise _bad_name(f"{shown}: the file name is not valid UTF-8; rename the file")
    for c in raw:
        if c in _BIDI_CONTROLS:
            # Right-to-left overrides make "exe.md" display as something else: a spoofing trick.
            raise _bad_name(
                f"{shown}: the file name contains an invisible text-direction control "
                f"(U+{ord(c):04X}); rename the file"
            )
    if fold:  # again after dropping: a mark that followed a dropped character composes with the one before
        name = unicodedata.normalize("NFKC", _visible(unicodedata.normalize("NFKC", raw))).strip()
    else:
        name = unicodedata.normalize("NFC", raw.strip())
    if not name:
        raise _bad_name("the file name is empty; give the document a name such as runbooks/cpu_high.md")
    for c in name:
        if unicodedata.category(c) == "Cc":
            raise _bad_name(
                f"{shown}: the file name contains a control character (U+{ord(c):04X}); rename the file"
            )
    _refuse_windows_path(name, shown)
    name = name.replace("\\", "/")
    if name.startswith("/") or re.match(r"[A-Za-z]:", name):
        raise _bad_name(
            f"{shown}: absolute paths are not allowed as document ids; use a path relative to the "
            "knowledge base, e.g. runbooks/cpu_high.md"
        )
    if name.endswith("/"):
        raise _bad_name(f"{shown}: the name ends with a slash, so it names a folder, not a file")
    parts: list[str] = []
    for seg in name.split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            raise _bad_name(
                f"{shown}: '..' is not allowed in a document id (it would point outside the "
                "knowledge base); use a path inside it"
            )
        if seg.strip(". ") == "":
            # Windows drops trailing dots and spaces, so "... " can behave like ".." there.
            raise _bad_name(f"{shown}: '{seg}' is not a usable folder or file name (only dots and spaces)")
        parts.append(seg)
    if not parts:
        raise _bad_name(f"{shown}: the file name is empty; give the document a name such as notes.md")
    doc_id = "/".join(parts)
    size = len(doc_id.encode("utf-8"))
    if size > MAX_DOC_ID_BYTES:
        raise _bad_name(
            f"{shown}: the document id is {size} bytes long (UTF-8), over the {MAX_DOC_ID_BYTES}-byte "
            "limit; use shorter folder or file names"
        )
    return doc_id


def legacy_doc_id(raw: str, folder: str = "") -> str:
    """The doc_id earlier releases gave `raw` in `folder` (NFC, format characters kept), "" when refused."""
    try:
        return join_doc_id(folder, raw, fold=False)
    except LoaderError:
        return ""


def _visible(name: str) -> str:
    """`name` without its format characters (category Cf), except those inside an emoji (see the docstring)."""
    if not any(unicodedata.category(c) == "Cf" for c in name):
        return name
    kept = []
    for i, c in enumerate(name):
        if unicodedata.category(c) != "Cf" or _draws(name, i):
            kept.append(c)
    return "".join(kept)


def _draws(name: str, i: int) -> bool:
    """Whether the format character at `i` is part of an emoji: a zero-width joiner between two pictographs
    (after a skin tone or a variation selector too), or a tag character of a flag (🏴 + tags)."""
    c, before, after = name[i], name[i - 1] if i else "", name[i + 1] if i + 1 < len(name) else ""
    if c == "\u200d":
        return _pictograph(before) and _pictograph(after)
    if 0xE0020 <= ord(c) <= 0xE007F:
        return before == "\U0001F3F4" or (before != "" and 0xE0020 <= ord(before) <= 0xE007F)
    return False


def _pictograph(c: str) -> bool:
    return c != "" and (ord(c) > 0x7F and unicodedata.category(c) in ("So", "Sk") or c == "\ufe0f")


def doc_id_for(path: Path, root: Path | None, prefix: str = "", *, fold: bool = True) -> str:
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
            raise _bad_name(
                f"{path}: the file is not inside the folder being ingested ({root})"
            ) from None
        if rel == ".":
            raise _bad_name(f"{path}: this is the ingested folder itself, not a file inside it")
    return join_doc_id(prefix, rel, fold=fold)


def join_doc_id(folder: str, name: str, *, fold: bool = True) -> str:
    """The doc_id of `name` inside `folder` ("" for none): `join_doc_id("runbooks/", "a.md")` is
    "runbooks/a.md". The folder may be spelled like any path (`./runbooks`, `runbooks\\`)."""
    folder = folder.strip().strip("/\\")
    if folder and fold:  # the name alone: in a folder, `C:\\x.md` would become the folder `C:` silently
        _refuse_windows_path(unicodedata.normalize("NFKC", _visible(name)).strip(), display(f"{folder}/{name}"))
    return normalize_doc_id(f"{folder}/{name}" if folder else name, fold=fold)


def _refuse_windows_path(name: str, shown: str) -> None:
    if re.match(r"[A-Za-z]:[\\/]|[\\/]{2}[^\\/]", name):
        # What a Windows client (or an old browser) sends as the file's whole path. Taking its last part would
        # make C:\Users\me\x.md the document x.md, replacing one of that name without a word.
        raise _bad_name(
            f"{shown}: a Windows path (absolute paths are not allowed as document ids); send the file's name, "
            "or a path inside the knowledge base such as runbooks/x.md"
        )


def _bad_name(message: str) -> LoaderError:
    return LoaderError(message, code="bad_name")
