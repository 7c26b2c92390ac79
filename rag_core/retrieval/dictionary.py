"""A dictionary suggested from a knowledge base's own headings and code terms (rag_core.dictionary), for a person to
review before it becomes the knowledge base's (kb.upgrade.reindex_bm25)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from ..dictionary import MAX_TERM_CHARS, key
from ..ports import ChunkStore
from ..text import fold
from ..words import _jieba
from .keywords import analyse


@dataclass(frozen=True)
class Suggestion:
    term: str
    kind: str  # "heading" (words of headings that jieba cuts in pieces) or "code" (a `code span`, CamelCase, a_b, a-b)
    chunks: int  # chunks holding it

    def to_dict(self) -> dict[str, object]:
        return {"term": self.term, "kind": self.kind, "chunks": self.chunks}


_CODE_SPAN = re.compile(r"`([^`\n]{3,64})`")
_CODE_WORD = re.compile(r"(?<![\w-])(?:[A-Za-z]+[a-z0-9]*[A-Z][A-Za-z0-9]*|[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)+)"
                        r"(?![\w-])")
_ASKING = ("什么", "怎么", "如何", "哪些", "哪个", "是否", "为何")  # question words: no one's product term
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]{3,10}")


def suggest(chunks: Iterable[tuple[str, str]], limit: int = 200) -> list[Suggestion]:
    """Terms worth keeping whole, from chunks given as (heading path, content): code spans and code-like words
    (CamelCase, snake_case, kebab-case) of the content that BM25 cuts in pieces, and Chinese words of 3-10
    characters in headings that jieba cuts into pieces, that appear in at least two chunks (a term of one chunk
    ranks that chunk alone anyway), most chunks first. A person reviews them before they become the dictionary."""
    kinds: dict[str, str] = {}
    counts: Counter[str] = Counter()
    spelled: dict[str, str] = {}
    for heading, content in chunks:
        here: set[str] = set()
        for term in [*_CODE_SPAN.findall(content), *_CODE_WORD.findall(content)]:
            term = term.strip()
            if 3 <= len(term) <= MAX_TERM_CHARS and len(analyse(term)) > 1:  # BM25 would cut it in pieces
                here.add(key(term))
                spelled.setdefault(key(term), term)
                kinds.setdefault(key(term), "code")
        for run in _CJK_RUN.findall(fold(heading)):
            for word in _heading_words(run):
                here.add(word)
                spelled.setdefault(word, word)
                kinds.setdefault(word, "heading")
        counts.update(here)
    ranked = sorted((t for t, n in counts.items() if n >= 2), key=lambda t: (-counts[t], t))
    return [Suggestion(spelled[t], kinds[t], counts[t]) for t in ranked[:limit]]


def suggest_for(store: ChunkStore, limit: int = 200) -> list[Suggestion]:
    """`suggest` over every chunk of a knowledge base's store (its heading path, its content)."""
    return suggest([(str(c.metadata.get("headingPath") or c.title), c.content)
                    for d in store.list_documents() for c in store.get_chunks(d.doc_id)], limit)


def _heading_words(run: str) -> list[str]:
    """Words of a heading's Chinese run that BM25 would cut in pieces: jieba's longest words of 3+ characters whose
    search-mode cut has more than one piece, or the run itself when jieba cuts it in 2-3 pieces."""
    words = [w for w in _jieba().cut(run, HMM=False) if len(w) >= 3 and len(analyse(w)) > 1
             and not any(q in w for q in _ASKING)]
    if not words and 2 <= len(list(_jieba().cut(run, HMM=False))) <= 3 and len(run) <= 6 and not any(
            q in run for q in _ASKING):
        words = [run]
    return words
