"""The keyword channel a person can read (issue 41): the query's terms as BM25 saw them, which of them each hit's chunk
contains (`matched_terms`) and each term's share of the chunk's BM25 score (`term_shares`).

The terms. BM25 is Milvus's: its analyzer (store.milvus.schema.ANALYZER: jieba, cnalphanumonly, lowercase, an English
stemmer, English stop words) reads the query folded to Simplified Chinese (text.fold). Milvus Lite 2.5.1 cannot run
that analyzer for us (`run_analyzer` answers UNIMPLEMENTED), so `query_terms` reproduces it: Python jieba with
Milvus's jieba settings (search mode, HMM on, the same default dictionary as jieba-rs), the same token filter and stop
words, but no stemming (a term is shown as jieba cut it; Milvus stems it when it is searched). That is an estimate of
the analyzer; the scores below say when it was wrong.

The scores. They are Milvus's own, with the knowledge base's own statistics (N, each term's document frequency, the
average length): each term is searched alone, restricted to the hits shown (a store that is a ports.BM25TermScorer,
one request for every term), and Milvus's score of a chunk for a term alone is that term's IDF x term-frequency part.
A term that Milvus cuts further when alone (a long Chinese word in search mode) is scored less the parts that are
terms of their own. A term repeated in the query counts that many times, as Milvus counts it. The sum over the
terms is then the chunk's BM25 score; where the hit has a BM25 score of the lookup, `exact` says whether the sum
matched it (bench/keywords.py measures how often: docs/retrieval.md). A store without the capability (several
knowledge bases at once, the in-memory store) gives the terms found in the text, without scores.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..dictionary import found, key
from ..ports import BM25TermScorer, KnowledgeSearchPort, SingleStoreSearchPort
from ..records import Candidate
from ..text import fold

log = logging.getLogger(__name__)

# Milvus's `_english_` stop words (the Lucene list), dropped after stemming; these are their own stems.
STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these they "
    "this to was will with".split())
# cnalphanumonly drops a token without any of these (punctuation, spaces); `5%`, `covid-19` are kept whole
_KEPT = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaffA-Za-z0-9]+")
_ALNUM = re.compile(r"[A-Za-z0-9]+")
_DIGITS = re.compile(r"[0-9]+%?")
# how far the sum of the terms' scores may be from Milvus's BM25 score of the hit and still be called the same
EXACT_WITHIN = 1e-3


def _cut(text: str) -> list[str]:
    """jieba's search-mode cut as jieba-rs (Milvus's) makes it: Python jieba's, with the one difference measured on
    Milvus Lite 2.5.1: a run of letters and digits, one more character and digits stays one token there (jieba-rs's
    `[a-zA-Z0-9]+(?:.\\d+)?%?`, whose `.` is any character: `covid-19`, `x86_64`), where Python jieba cuts it in
    three (`covid`, `-`, `19`)."""
    from ..words import _jieba

    tokens = list(_jieba().cut_for_search(text, HMM=True))
    out: list[str] = []
    i = 0
    while i < len(tokens):
        first = tokens[i]
        if (i + 2 < len(tokens) and _ALNUM.fullmatch(first) and len(tokens[i + 1]) == 1
                and not tokens[i + 1].isspace() and not _KEPT.match(tokens[i + 1])
                and (digits := _DIGITS.match(tokens[i + 2]))):
            out.append(first + tokens[i + 1] + digits.group())
            if digits.end() < len(tokens[i + 2]):
                out.append(tokens[i + 2][digits.end():])
            i += 3
        else:
            out.append(first)
            i += 1
    return out


def analyse(text: str, dictionary: Sequence[str] = (), stop_words: Sequence[str] = ()) -> list[str]:
    """`text`'s tokens as Milvus's analyzer emits them, estimated (see the module docstring): folded, cut by jieba in
    search mode, tokens without a Chinese character, letter or digit dropped (cnalphanumonly keeps `5%`), lower-cased,
    stop words dropped (English, and the knowledge base's own); in order, repeats kept. Then the terms of the
    knowledge base's `dictionary` that `text` holds, each once (what their aliases match: rag_core.dictionary),
    unless jieba gave that term already."""
    own = {key(w) for w in stop_words}
    tokens = [token for token in (t.lower() for t in _cut(fold(text)) if _KEPT.search(t))
              if token not in STOP_WORDS and token not in own]
    return tokens + [term for term in found(text, dictionary) if key(term) not in tokens]


def query_terms(query: str, dictionary: Sequence[str] = (), stop_words: Sequence[str] = ()) -> tuple[str, ...]:
    """The distinct terms BM25 searched `query` for, in the query's order (`dictionary`, `stop_words`: the knowledge
    base's own, rag_core.dictionary)."""
    return tuple(dict.fromkeys(analyse(query, dictionary, stop_words)))


@dataclass(frozen=True)
class HitTerms:
    """One hit's keywords: the query terms its chunk contains, and (scored by Milvus) each term's BM25 score for it."""

    matched: tuple[str, ...]
    scores: Mapping[str, float] = field(default_factory=dict)  # term -> its part of the BM25 score (empty: unscored)
    exact: bool | None = None  # the scores add up to the hit's BM25 score (None: the hit had no BM25 score to check)

    @property
    def total(self) -> float:
        return sum(self.scores.values())

    @property
    def shares(self) -> dict[str, float]:
        """Each matched term's share of the BM25 score (0-1), best first; {} when unscored."""
        total = self.total
        if total <= 0:
            return {}
        return {t: round(s / total, 4) for t, s in sorted(self.scores.items(), key=lambda kv: -kv[1]) if s > 0}

    def to_dict(self) -> dict[str, Any]:
        return {"matched_terms": list(self.matched), "term_shares": self.shares,
                "term_scores": dict(self.scores), "bm25_exact": self.exact}


NOTHING = HitTerms(())


@dataclass(frozen=True)
class Keywords:
    """The query's terms and each hit's (by row id)."""

    terms: tuple[str, ...]
    hits: Mapping[str, HitTerms]
    scored: bool  # the scores are Milvus's (False: terms found in the text, no scores)

    def of(self, row_id: str | None) -> HitTerms:
        return self.hits.get(row_id or "", NOTHING)

    def to_dict(self) -> dict[str, Any]:
        checked = [h.exact for h in self.hits.values() if h.exact is not None]
        return {"terms": list(self.terms), "scored_by": "milvus" if self.scored else "text",
                "analyzer": "estimate: Python jieba (search mode) with Milvus's filters, no stemming",
                "exact": sum(checked), "checked": len(checked)}


def found_in(term: str, text: str) -> bool:
    """Whether `text` (folded already) holds `term`: Chinese as a substring, an English word as a word start (the
    estimate of a stemmed match used where Milvus did not score)."""
    if not term.isascii():
        return term in text
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(_stem_guess(term))}", text, re.I) is not None


def _stem_guess(term: str) -> str:
    """`term` without a common English ending (at least 3 letters kept): what marks `runs` for `running`, `queries`
    for `query`."""
    stem = term
    for end in ("ing", "ed", "es", "ly", "s"):
        if term.endswith(end) and len(term) - len(end) >= 3:
            stem = term[: -len(end)]
            # running -> runn -> run, as the stemmer undoubles (not -ll, -ss, -zz: falling, passes)
            if stem[-1] == stem[-2] and stem[-1] not in "aeiouylsz":
                stem = stem[:-1]
            break
    return stem[:-1] if len(stem) >= 4 and stem[-1] in "iy" else stem  # query, queries -> quer


def own_scores(terms: Sequence[str], alone: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """Each term's own score per row: Milvus's score of the term searched alone (`alone`: term -> row -> score) less
    that of the other terms Milvus cut it into (a compound Chinese word), shortest terms first."""
    own: dict[str, dict[str, float]] = {}
    for term in sorted(terms, key=len):
        parts = set(analyse(term)) - {term}
        rows = dict(alone.get(term, {}))
        for part in parts:
            for row, score in (own.get(part) or alone.get(part) or {}).items():
                rows[row] = rows.get(row, 0.0) - score
        own[term] = {row: score for row, score in rows.items() if score > EXACT_WITHIN}
    return own


def score_hits(query: str, hits: Iterable[tuple[str, str, float | None]],
               scorer: BM25TermScorer | None) -> Keywords:
    """The keywords of `hits` ((row id, content, BM25 score of the lookup or None)) for `query`: scored by `scorer`
    (one request), else by the text. A scorer that fails leaves the text's answer (logged): an explanation must not
    fail the lookup it explains."""
    kb_terms = (scorer.bm25_terms, scorer.stop_words) if scorer is not None else ((), ())
    counts = Counter(analyse(query, *kb_terms))
    terms = tuple(counts)
    hits = [(row, content, bm25) for row, content, bm25 in hits if row]
    alone = None
    if scorer is not None and terms and hits:
        wanted = tuple(dict.fromkeys([*terms, *(p for t in terms for p in analyse(t))]))
        try:
            alone = scorer.bm25_term_scores(wanted, [row for row, _, _ in hits])
        except Exception as exc:  # noqa: BLE001 - any store error: the text's answer instead
            log.warning("keyword scores unavailable: %s", str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    if alone is None:
        return Keywords(terms, {row: HitTerms(tuple(t for t in terms if found_in(t, fold(content))))
                                for row, content, _ in hits}, scored=False)
    own = own_scores(terms, alone)
    out = {}
    for row, _, bm25 in hits:
        scores = {t: counts[t] * own[t][row] for t in terms if row in own[t]}
        total = sum(scores.values())
        exact = None if bm25 is None else abs(total - bm25) <= EXACT_WITHIN * max(1.0, bm25)
        out[row] = HitTerms(tuple(scores), scores, exact)
    return Keywords(terms, out, scored=True)


def scorer_of(port: KnowledgeSearchPort) -> BM25TermScorer | None:
    """The store that scores terms behind a port over one knowledge base, if it can."""
    if isinstance(port, SingleStoreSearchPort) and isinstance(port.store, BM25TermScorer):
        return port.store
    return None


def of_candidates(port: KnowledgeSearchPort, query: str, candidates: Iterable[Candidate]) -> Keywords:
    """The keywords of a lookup's hits (the assemble phase): their BM25 channel's score is what the sum is checked
    against."""
    return score_hits(query, [(c.id or "", c.content, c.channels["bm25"][1] if "bm25" in c.channels else None)
                              for c in candidates], scorer_of(port))


def term_spans(text: str, terms: Sequence[str]) -> list[tuple[int, int]]:
    """Where `terms` occur in `text` (start, end), longest term first and never overlapping, found in `text` folded
    character by character (so a Traditional character marks its Simplified term, the offsets staying `text`'s):
    Chinese terms as substrings, English ones as words starting with the term's stem (an estimate of the stemmer)."""
    if not terms:
        return []
    folded = text if text.isascii() else fold(text)
    if len(folded) != len(text):  # a phrase folded to another length: character by character keeps the offsets
        folded = "".join(f if len(f := fold(c)) == 1 else c for c in text)
    spans: list[tuple[int, int]] = []
    taken = [False] * len(text)
    for term in sorted(dict.fromkeys(terms), key=lambda w: (-len(w), w)):
        pattern = (re.escape(term) if not term.isascii()
                   else rf"(?<![A-Za-z0-9]){re.escape(_stem_guess(term))}[A-Za-z0-9]*")
        for m in re.finditer(pattern, folded, re.I):
            if not any(taken[m.start():m.end()]):
                spans.append((m.start(), m.end()))
                taken[m.start():m.end()] = [True] * (m.end() - m.start())
    return sorted(spans)
