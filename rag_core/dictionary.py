"""A knowledge base's own BM25 dictionary and stop words (issue 41): service names, commands and product terms that
BM25 should match whole (`zephyrctl`, `DiskSpaceCritical`, `缓存预热`, `kubectl rollout undo`), and words it should
not count at all.

Dictionary. Milvus Lite 2.5.1's jieba takes no dictionary of ours: a `dict` in its tokenizer parameters is accepted
when the collection is made, then every insert fails (measured). So a term is matched whole another way: wherever
the text BM25 reads (`bm25_text`, store.milvus.rows) or a query holds a dictionary term, one more token is added, the
term's alias (`alias`: letters and digits that jieba keeps whole and no filter changes). The term's words still count
as before; a chunk holding the whole term also matches the alias, a rare token with a high IDF, so it ranks above
chunks that hold only its pieces (`缓存` and `预热` apart). Matching is on the text folded to Simplified Chinese and
lower-cased, at word edges for a term that begins or ends with a letter or digit (`-` and `_` are not edges:
`my-order-service` does not hold `order-service`).

Stop words are Milvus's own: a `stop` filter with the knowledge base's words, before the stemmer, beside the English
list (store.milvus.schema.analyzer). Both belong to the chunk collection they were indexed with (its description
records them), so a change makes a new collection with the same vectors and swaps it in (kb.upgrade.reindex_bm25).

rag_core.retrieval.dictionary suggests terms from the knowledge base's own headings and code spans for a person to
review.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from .errors import RagError
from .text import fold

MAX_TERMS = 2000
MAX_TERM_CHARS = 64
_ALIAS = "zkt"  # an alias is zkt + 12 hex digits + 9: one token for jieba, kept by cnalphanumonly, not stemmed
_EDGE = re.compile(r"[A-Za-z0-9]")


def key(term: str) -> str:
    return fold(term).lower()


def alias(term: str) -> str:
    """The token added for `term` (the same for every spelling that folds alike)."""
    return f"{_ALIAS}{hashlib.sha256(key(term).encode()).hexdigest()[:12]}9"


def parse_terms(text: str, what: str = "dictionary") -> tuple[str, ...]:
    """Terms one per line (or separated by commas), blank lines and `#` comments skipped, repeats dropped (as they
    fold); one line (RagError) naming the bad one."""
    terms: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
        for term in (t.strip() for t in line.split(",")):
            if not term:
                continue
            if len(term) > MAX_TERM_CHARS:
                raise RagError(f"{what}, line {number}: {term[:20]!r}… is longer than {MAX_TERM_CHARS} characters.")
            if any(c in term for c in "\t\r\x00"):
                raise RagError(f"{what}, line {number}: {term!r} holds a control character.")
            terms.setdefault(key(term), term)
    if len(terms) > MAX_TERMS:
        raise RagError(f"{what}: {len(terms)} terms; at most {MAX_TERMS}.")
    return tuple(terms.values())


def terms_of(items: Sequence[str], what: str = "dictionary") -> tuple[str, ...]:
    """Terms given one per item (the HTTP API's lists), by the rules of `parse_terms` (item N is its line N); an item
    that a line would read as something else (a line break, a comma, a `#`) is refused with one line."""
    for number, item in enumerate(items, 1):
        if bad := next((c for c in "\n\r,#" if c in item), None):
            raise RagError(f"{what}, item {number}: {item[:20]!r} holds {bad!r}; give one term per item, without "
                           "line breaks, commas or #.")
    try:
        return parse_terms("\n".join(items), what)
    except RagError as exc:
        raise RagError(str(exc).replace(f"{what}, line ", f"{what}, item ", 1)) from None


def _pattern(terms: Sequence[str]) -> re.Pattern[str] | None:
    parts = []
    for term in sorted({key(t) for t in terms}, key=len, reverse=True):
        body = re.escape(term)
        start = r"(?<![a-z0-9_\-])" if _EDGE.match(term[0]) else ""  # `-` and `_` join a name: not an edge
        end = r"(?![a-z0-9_\-])" if _EDGE.match(term[-1]) else ""
        parts.append(f"{start}{body}{end}")
    return re.compile("|".join(parts)) if parts else None


_patterns: dict[tuple[str, ...], re.Pattern[str] | None] = {}


def found(text: str, terms: Sequence[str]) -> list[str]:
    """The dictionary terms `text` holds (as they fold), in the order they first appear."""
    if not terms:
        return []
    cached = tuple(terms)
    if cached not in _patterns:
        if len(_patterns) > 64:
            _patterns.clear()
        _patterns[cached] = _pattern(terms)
    pattern = _patterns[cached]
    if pattern is None:
        return []
    by_key = {key(t): t for t in terms}
    return list(dict.fromkeys(by_key[m.group(0)] for m in pattern.finditer(key(text)) if m.group(0) in by_key))


def with_aliases(text: str, terms: Sequence[str]) -> str:
    """`text` with the alias of every dictionary term it holds added (what BM25 reads and is asked)."""
    held = found(text, terms)
    return f"{text}\n{' '.join(alias(t) for t in held)}" if held else text


