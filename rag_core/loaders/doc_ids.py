"""Document ids: the path of a document inside the knowledge base, canonical and safe.

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
unusable as names (absolute paths, `..`, control characters, empty, over 512 UTF-8 bytes). It is the
one normalisation for every doc_id a person types too (`delete`, `reindex DOC_ID`, API paths): any
spelling of a path (`back\\slash.md`, `./a.md`, `a//b.md`, NFD accents) names the document ingest created
from it. `join_doc_id` puts a folder (`--prefix`, the upload page's folder box) in front of a name.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

from ..errors import LoaderError
from ..text import display

MAX_DOC_ID_BYTES = 512
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def normalize_doc_id(raw: str) -> str:
    """Return the canonical doc_id for a relative path, or raise `LoaderError` saying why not."""
    shown = display(raw)
    if "\x00" in raw:
        raise _bad_name(f"{shown}: the file name contains a NUL byte; rename the file")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in raw):
        # What os.fsdecode makes of file-name bytes that are not UTF-8.
        raise _bad_name(f"{shown}: the file name is not valid UTF-8; rename the file")
    name = unicodedata.normalize("NFC", raw.strip())
    if not name:
        raise _bad_name("the file name is empty; give the document a name such as runbooks/cpu_high.md")
    for c in name:
        if unicodedata.category(c) == "Cc":
            raise _bad_name(
                f"{shown}: the file name contains a control character (U+{ord(c):04X}); rename the file"
            )
        if c in _BIDI_CONTROLS:
            # Right-to-left overrides make "exe.md" display as something else: a spoofing trick.
            raise _bad_name(
                f"{shown}: the file name contains an invisible text-direction control "
                f"(U+{ord(c):04X}); rename the file"
            )
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
            raise _bad_name(
                f"{path}: the file is not inside the folder being ingested ({root})"
            ) from None
        if rel == ".":
            raise _bad_name(f"{path}: this is the ingested folder itself, not a file inside it")
    return join_doc_id(prefix, rel)


def join_doc_id(folder: str, name: str) -> str:
    """The doc_id of `name` inside `folder` ("" for none): `join_doc_id("runbooks/", "a.md")` is
    "runbooks/a.md". The folder may be spelled like any path (`./runbooks`, `runbooks\\`)."""
    folder = folder.strip().strip("/\\")
    return normalize_doc_id(f"{folder}/{name}" if folder else name)


def _bad_name(message: str) -> LoaderError:
    return LoaderError(message, code="bad_name")
