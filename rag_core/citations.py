"""Citations in an answer: `[document_id]`, where a document_id is an evidence key such as
`runbooks/cpu_high.md#chunk-2` (or `vector:<id>` / `content:<hash>` for rows without a chunk identity).

Models write them in several ways; all of these count: `[a#chunk-1]`, `[a#chunk-1, b#chunk-3]`,
`[a#chunk-1][b#chunk-3]`, `【a#chunk-1】`, `` [`a#chunk-1`] ``, `[document_id: a#chunk-1]`. A markdown link
`[text](url)` is not a citation. A bracketed token counts when it looks like an evidence key or is one
of the keys a tool returned, so `[1]` or `[sic]` are ignored rather than flagged.

A citation is shown to a person as its document and, when the chunk has one, its location: `cited_as`
gives `manual.pdf p. 12` (the evidence key stays what is cited and checked).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .records import cited_as

__all__ = ["check_citations", "cited_as", "extract_citations"]

_BRACKETS = re.compile(r"\[([^\[\]\n]{1,400})\](?!\()|【([^【】\n]{1,400})】")
_SEPARATORS = re.compile(r"\s*[,;，；]\s*")
_PREFIX = re.compile(r"^(?:document_id|doc_id|id|source|来源)\s*[:=：]\s*", re.I)
_KEY_SHAPE = re.compile(r"(?:#chunk-\d+(?:\.\.\d+)?|^vector:\S+|^content:[0-9a-f]{16})$")


def extract_citations(text: str, known: Iterable[str] = ()) -> list[str]:
    """Cited keys in order of first appearance, without repeats."""
    known_keys = set(known)
    found: list[str] = []
    for m in _BRACKETS.finditer(text or ""):
        inner = m.group(1) if m.group(1) is not None else m.group(2)
        for token in _SEPARATORS.split(inner):
            token = _PREFIX.sub("", token.strip().strip("`'\"").strip())
            if token and (token in known_keys or _KEY_SHAPE.search(token)) and token not in found:
                found.append(token)
    return found


def check_citations(text: str, returned: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(cited keys that a tool returned, cited keys that no tool returned)."""
    returned_keys = set(returned)
    cited = extract_citations(text, returned_keys)
    return (tuple(k for k in cited if k in returned_keys), tuple(k for k in cited if k not in returned_keys))
