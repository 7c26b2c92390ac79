"""The offline generator (no model, no key): deterministic pseudo-queries made from the knowledge base itself.

Chunks are taken in the seeded round-robin order (sampling.py); the chunks of odd and even positions in it
alternate between two kinds of query, each falling back to the other when it cannot be made:
* "title": the chunk's heading path as a title query: the document's top heading and the chunk's own
  heading ("运行手册：内存泄漏排查 告警规则"), or the top heading alone for a chunk directly under it;
* "terms": the chunk's most distinctive terms, `TERMS` of them: content terms (`agent.offline.terms`: jieba
  words of two or more characters for Chinese, words of three or more letters without stop words for English;
  no bare numbers) scored
  by tf x idf, tf = (1 + log count in the chunk), idf = log(1 + N / df) over the N chunks of the knowledge
  base; ties go to the term that comes first in the chunk. A term inside a better one ("泄漏" in "内存泄漏") is
  skipped.
The answer is the chunk's quotable sentence that best matches the query: the largest idf-weighted share of
the query's terms, the first such sentence on a tie, the chunk's first sentence when none shares a term (the
opening of a section answers its title). Near-duplicates of a kept query are rejected and counted (filters.py).

Such queries share words with the text, so they flatter BM25: they compare configurations, they do not measure
quality (`result.OFFLINE_WARNING`, carried by every offline set). No item is "should not be answerable" offline;
a person can mark any item so when reviewing.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence

from ...agent.offline import terms
from ...errors import EvaluationError
from ...ports import ChunkStore
from ..runner import EvalProgress
from ..testsets import TestItem
from .filters import DUPLICATE, NO_TERMS, KeepFilters
from .result import OFFLINE_WARNING, GenerationProgress, GenerationResult, shortfall_warning
from .sampling import LANGS, SampledChunk, check_size, quotable_sentences, read_chunks, sample_order

TERMS = 3
_NUMBER = re.compile(r"^[\d.,%:/\-]+$")
_MARKUP = re.compile(r"[`*_#>|]+")


def generate_offline(store: ChunkStore, *, size: int, seed: int = 0, per_doc_max: int | None = None,
                     lang: str = "auto", kb_name: str = "", progress: GenerationProgress | None = None
                     ) -> GenerationResult:
    """`size` offline items from the knowledge base behind `store` (see the module docstring). `lang` "zh" or
    "en" takes only chunks in that language (offline queries are the text's own words, never translated)."""
    if lang not in LANGS:
        raise EvaluationError(f"--lang {lang!r}: use one of {', '.join(LANGS)}.")
    started = time.perf_counter()
    report = progress or (lambda _: None)
    by_doc = read_chunks(store, kb_name, lambda done, total: report(EvalProgress("reading", done, total,
                                                                                 "reading the documents")))
    every = [c for cs in by_doc.values() for c in cs]
    idf = _idf(every)
    eligible = {d: [c for c in cs if (lang == "auto" or c.lang == lang) and quotable_sentences(c.content)]
                for d, cs in by_doc.items()}
    order = sample_order(eligible, seed, per_doc_max)
    check_size(size, order, len(by_doc), per_doc_max, kb_name)
    filters = KeepFilters()
    items: list[TestItem] = []
    tried = 0
    report(EvalProgress("generating", 0, size, "offline pseudo-queries"))
    for position, chunk in enumerate(order):
        if len(items) >= size:
            break
        tried += 1
        made = _pseudo_query(chunk, idf, title_first=position % 2 == 0)
        if made is None:
            filters.reject(NO_TERMS)
            continue
        kind, query, query_terms = made
        if filters.duplicate_of(query) is not None:
            filters.reject(DUPLICATE)
            continue
        filters.keep(query)
        items.append(TestItem(id=f"g{len(items) + 1:03d}", query=query, relevant=(chunk.doc_id,),
                              answers=(_best_sentence(chunk.content, query_terms, idf),), source=chunk.evidence_key,
                              lang=chunk.lang, generator="offline", kind=kind))
        report(EvalProgress("generating", len(items), size, f"{tried} chunks tried"))
    warnings = [OFFLINE_WARNING]
    if len(items) < size:
        warnings.append(shortfall_warning(size, len(items), filters.counts()))
    return GenerationResult(tuple(items), size, "offline", seed, kb_name, lang, per_doc_max, filters.counts(),
                            len(by_doc), len(every), len(order), tried, time.perf_counter() - started,
                            warnings=tuple(warnings))


def _idf(chunks: Sequence[SampledChunk]) -> dict[str, float]:
    df: Counter[str] = Counter()
    for chunk in chunks:
        df.update(terms(chunk.content))
    n = len(chunks)
    return {t: math.log(1 + n / d) for t, d in df.items()}


def _pseudo_query(chunk: SampledChunk, idf: Mapping[str, float],
                  title_first: bool) -> tuple[str, str, set[str]] | None:
    """(kind, query, the query's terms) for the chunk, or None when neither kind can be made."""
    makers = (_title_query, _terms_query) if title_first else (_terms_query, _title_query)
    for make in makers:
        made = make(chunk, idf)
        if made is not None:
            return made
    return None


def _title_query(chunk: SampledChunk, idf: Mapping[str, float]) -> tuple[str, str, set[str]] | None:
    path = [_clean(h) for h in chunk.heading_path if _clean(h)]
    if not path:
        return None
    query = path[0] if len(path) == 1 else f"{path[0]} {path[-1]}"
    return "title", query, terms(query)


def _terms_query(chunk: SampledChunk, idf: Mapping[str, float]) -> tuple[str, str, set[str]] | None:
    text = chunk.content.lower()
    scored = []
    for term in terms(chunk.content):
        if _NUMBER.match(term) or (term.isascii() and len(term) < 3):  # "le", "gi": labels and units, not topics
            continue
        count = text.count(term)
        if count:
            scored.append((-(1 + math.log(count)) * idf.get(term, 0.0), text.find(term), term))
    chosen: list[str] = []
    for _, _, term in sorted(scored):
        if any(term in c or c in term for c in chosen):
            continue
        chosen.append(term)
        if len(chosen) == TERMS:
            break
    if not chosen:
        return None
    chosen.sort(key=text.find)  # in the order the chunk has them: reads more like a query
    return "terms", " ".join(chosen), set(chosen)


def _clean(heading: str) -> str:
    return " ".join(_MARKUP.sub(" ", heading).split())


def _best_sentence(content: str, query_terms: set[str], idf: Mapping[str, float]) -> str:
    candidates = quotable_sentences(content)
    total = sum(idf.get(t, 0.0) for t in query_terms) or 1.0
    best, best_score = candidates[0], 0.0
    for sentence in candidates:
        score = sum(idf.get(t, 0.0) for t in terms(sentence) & query_terms) / total
        if score > best_score:
            best, best_score = sentence, score
    return best
