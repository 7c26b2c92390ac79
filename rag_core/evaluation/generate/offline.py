"""The offline generator (no model, no key): deterministic questions made from the knowledge base itself.

Chunks are taken in the seeded round-robin order (sampling.py); a chunk is used when it holds a sentence an
answer may quote (`questions.answer_sentences`: one that ends at a sentence end). The chunks of odd and even
positions in the order alternate between two kinds of question, each falling back to the other, then to the
third, when it cannot be made (the templates are in questions.py, in Chinese and English by the chunk's
language):
* "title": from the chunk's heading path ("How do I go about expanding a PVC?", "发布规范中的封网是怎样的？");
  its answer is the sentence that best matches the heading: the largest idf-weighted share of the heading's
  terms, the first such sentence on a tie, the chunk's first sentence when none shares a term (the opening of
  a section answers its title);
* "sentence": from the form of one of its sentences, the first that has one (a condition, a definition, an
  instruction or a rule under a heading: "What happens if `df` reports the disk as full but `du` cannot find
  the space?", "`rows` 表示什么？"); its answer is that sentence;
* "terms": the chunk's most distinctive terms in a question ("What do we know about Ca2, AMPA and migration?"),
  `TERMS` of them: content terms (`words.terms`: jieba words of two or more characters for Chinese,
  words of three or more letters without stop words for English; no bare numbers) scored by tf x idf,
  tf = (1 + log count in the chunk), idf = log(1 + N / df) over the N chunks of the knowledge base; ties go to
  the term that comes first in the chunk. A term inside a better one ("泄漏" in "内存泄漏") is skipped. Its
  answer is the sentence that best matches the terms, as for a title.
Where a form has several wordings, a generator seeded by the seed and the chunk's evidence key picks one.
Near-duplicates of a kept question are rejected and counted (filters.py).

Follow-ups (`follow_ups`, a share of the set; none by default): a chunk that comes to a follow-up's place
(sampling.follow_up_slot) gives a first question that names its topic (the title question of its heading path, else
its terms question) and a follow-up that refers back to it without naming it
(`questions.follow_up_question`: "What is its default value?", "How do I check it?", "那要多久呢？"), answered by
the chunk's sentence that holds what it asks (a default, a command, a time...). The item is the follow-up, with the
first question as its `history` (kind "follow_up"); one that would stand alone is rejected (`filters.stands_alone`).

Avoiding the rare words (`avoid_rare`, `eval generate --avoid-rare`): a question made of the chunk's rarest words
finds the chunk by keyword search alone, so such a set rewards BM25 and would tune a knowledge base away from a
better embedder (issue 41). With it, the chunk's rare terms (`rare_terms`: its `RARE_SHARE` of content terms of
highest idf over the knowledge base's chunks, at least `RARE_MIN`, ties included, the heading's words excepted) are
left out: a title question comes first for every chunk (the section's heading words ask it), a sentence question
drops the rare words it copied (refused when fewer than `MIN_LEFT` content terms remain), and a terms question
names the chunk's most distinctive terms among the others. Whether such sets choose settings as real labels do is
measured by bench/tune_agreement.py (bench/README.md).

Such questions are made of the text's own words, so they flatter BM25: they compare configurations, they do
not measure quality (`result.OFFLINE_WARNING`, carried by every offline set). No item is "should not be
answerable" offline; a person can mark any item so when reviewing.
"""

from __future__ import annotations

import math
import random
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence

from ...errors import EvaluationError
from ...ports import ChunkStore
from ...records import ConversationTurn
from ...words import terms
from ..runner import EvalProgress
from ..testsets import TestItem
from .filters import DUPLICATE, NO_TERMS, STANDS_ALONE, KeepFilters, stands_alone
from .questions import (
    answer_sentences,
    clean_heading,
    follow_up_question,
    heading_question,
    sentence_question,
    terms_question,
)
from .result import OFFLINE_WARNING, GenerationProgress, GenerationResult, shortfall_warning
from .sampling import (
    LANGS,
    SampledChunk,
    check_size,
    follow_up_count,
    follow_up_slot,
    read_chunks,
    sample_order,
)

TERMS = 3
RARE_SHARE, RARE_MIN = 0.25, 3  # avoid_rare: the share of a chunk's terms (by idf) left out, and at least this many
MIN_LEFT = 2  # avoid_rare: a question with fewer content terms once the rare ones are out asks nothing
_NUMBER = re.compile(r"^[\d.,%:/\-]+$")


def generate_offline(store: ChunkStore, *, size: int, seed: int = 0, per_doc_max: int | None = None,
                     lang: str = "auto", follow_ups: float = 0.0, kb_name: str = "", avoid_rare: bool = False,
                     progress: GenerationProgress | None = None) -> GenerationResult:
    """`size` offline items from the knowledge base behind `store` (see the module docstring), `round(size *
    follow_ups)` of them follow-ups. `lang` "zh" or "en" takes only chunks in that language (offline questions
    are the text's own words, never translated). `avoid_rare`: questions without the chunk's rarest words."""
    if lang not in LANGS:
        raise EvaluationError(f"--lang {lang!r}: use one of {', '.join(LANGS)}.")
    wanted_follow_ups = follow_up_count(size, follow_ups)
    started = time.perf_counter()
    report = progress or (lambda _: None)
    by_doc = read_chunks(store, kb_name, lambda done, total: report(EvalProgress("reading", done, total,
                                                                                 "reading the documents")))
    every = [c for cs in by_doc.values() for c in cs]
    idf = _idf(every)
    eligible = {d: [c for c in cs if (lang == "auto" or c.lang == lang) and _answers(c)] for d, cs in by_doc.items()}
    order = sample_order(eligible, seed, per_doc_max)
    check_size(size, order, len(by_doc), per_doc_max, kb_name)
    filters = KeepFilters()
    items: list[TestItem] = []
    tried = 0
    report(EvalProgress("generating", 0, size, "offline questions"))
    for position, chunk in enumerate(order):
        if len(items) >= size:
            break
        tried += 1
        rng = random.Random(f"offline:{seed}:{chunk.evidence_key}")
        history: tuple[ConversationTurn, ...] = ()
        if follow_up_slot(len(items), size, wanted_follow_ups):
            pair = _follow_up(chunk, idf, rng)
            if pair is None:
                filters.reject(NO_TERMS)
                continue
            first, query, answer = pair
            if stands_alone(query, first):
                filters.reject(STANDS_ALONE)
                continue
            kind, topic, history = "follow_up", f"{first} {query}", (ConversationTurn("user", first),)
        else:
            rare = rare_terms(chunk, idf) if avoid_rare else frozenset()
            made = _question(chunk, idf, rng, heading_first=avoid_rare or position % 2 == 0, rare=rare)
            if made is None:
                filters.reject(NO_TERMS)
                continue
            kind, query, answer = made
            topic = _topic(chunk) if kind == "title" else query  # two chunks of one section ask the same of its title
        if filters.duplicate_of(topic) is not None:
            filters.reject(DUPLICATE)
            continue
        filters.keep(topic)
        items.append(TestItem(id=f"g{len(items) + 1:03d}", query=query, relevant=(chunk.doc_id,), answers=(answer,),
                              source=chunk.evidence_key, lang=chunk.lang, generator="offline", kind=kind,
                              history=history))
        report(EvalProgress("generating", len(items), size, f"{tried} chunks tried"))
    warnings = [OFFLINE_WARNING]
    if len(items) < size:
        warnings.append(shortfall_warning(size, len(items), filters.counts()))
    return GenerationResult(tuple(items), size, "offline", seed, kb_name, lang, per_doc_max, filters.counts(),
                            len(by_doc), len(every), len(order), tried, time.perf_counter() - started,
                            warnings=tuple(warnings), follow_up_share=follow_ups,
                            avoid_rare=avoid_rare)


def _answers(chunk: SampledChunk) -> list[str]:
    return answer_sentences(chunk.content, first_chunk=chunk.chunk_index == 0)


def _topic(chunk: SampledChunk) -> str:
    """What a title question asks about, whatever its wording: the document's title and the chunk's heading."""
    path = [h for h in (clean_heading(p) for p in chunk.heading_path) if h]
    return " ".join(path[:1] + path[-1:] if len(path) > 1 else path)


def _idf(chunks: Sequence[SampledChunk]) -> dict[str, float]:
    df: Counter[str] = Counter()
    for chunk in chunks:
        df.update(terms(chunk.content))
    n = len(chunks)
    return {t: math.log(1 + n / d) for t, d in df.items()}


def _question(chunk: SampledChunk, idf: Mapping[str, float], rng: random.Random,
              heading_first: bool, rare: frozenset[str] = frozenset()) -> tuple[str, str, str] | None:
    """(kind, question, answer) for the chunk, or None when no kind can be made; without the `rare` terms (but
    the heading's) when some are given."""
    answers = _answers(chunk)
    makers = (_title_question, _sentence_question) if heading_first else (_sentence_question, _title_question)
    for make in makers:
        made = make(chunk, answers, idf, rng)
        if made is not None and rare:
            made = _without(made, rare, chunk.lang)
        if made is not None:
            return made
    return _terms_question(chunk, answers, idf, rng, skip=rare)


def rare_terms(chunk: SampledChunk, idf: Mapping[str, float]) -> frozenset[str]:
    """The chunk's rarest content terms: its `RARE_SHARE` of terms of highest idf (at least `RARE_MIN`), and every
    term as rare as the last of those (in a small knowledge base most terms are in one chunk only: which of them
    to keep would be arbitrary), but never its commonest terms (when the share reaches them, only the terms rarer
    than they are); the words of its heading path excepted (a person asks with those)."""
    heading = terms(" ".join(clean_heading(h) for h in chunk.heading_path))
    text = chunk.content.lower()
    own = [t for t in terms(chunk.content) if t not in heading and not _NUMBER.match(t)]
    ranked = sorted(own, key=lambda t: (-idf.get(t, 0.0), text.find(t), t))
    if not ranked:
        return frozenset()
    cut = idf.get(ranked[min(len(ranked), max(RARE_MIN, math.ceil(len(ranked) * RARE_SHARE))) - 1], 0.0)
    if cut <= idf.get(ranked[-1], 0.0):  # the share reaches the chunk's commonest terms: only those rarer than them
        return frozenset(t for t in ranked if idf.get(t, 0.0) > cut)
    return frozenset(t for t in ranked if idf.get(t, 0.0) >= cut)  # a term as rare as the last one is as rare


def _without(made: tuple[str, str, str], rare: frozenset[str], lang: str) -> tuple[str, str, str] | None:
    """The question of `made` with the `rare` terms it holds dropped; None when fewer than `MIN_LEFT` content
    terms are left (it would ask nothing)."""
    kind, query, answer = made
    if not terms(query) & rare:
        return made
    if lang == "zh":
        for term in sorted(rare, key=len, reverse=True):
            query = re.sub(re.escape(term), "", query, flags=re.IGNORECASE)
    else:
        kept = [w for w in query.split() if not (terms(w) & rare)]
        end = query[-1] if query[-1] in "?？" else ""
        query = " ".join(kept).rstrip(",;: ")
        query = query if query.endswith(end) else query + end
    query = re.sub(r"\s+([,?？])", r"\1", query).strip()
    return (kind, query, answer) if len(terms(query)) >= MIN_LEFT else None


def _follow_up(chunk: SampledChunk, idf: Mapping[str, float], rng: random.Random) -> tuple[str, str, str] | None:
    """(first question, follow-up, the follow-up's answer) for the chunk, or None when it has neither a heading
    nor a distinctive term to name its topic."""
    answers = _answers(chunk)
    first = heading_question(chunk.heading_path, chunk.lang, rng) if chunk.heading_path else None
    if first is not None:
        answered = _best_sentence(answers, terms(clean_heading(chunk.heading_path[-1])), idf)
    else:
        chosen = _distinctive_terms(chunk.content, idf)
        if not chosen:
            return None
        first = terms_question([_as_written(term, chunk.content) for term in chosen], (), chunk.lang, rng)
        answered = _best_sentence(answers, set(chosen), idf)
    query, answer = follow_up_question(answers, first, chunk.lang, rng, answered)
    return first, query, answer


def _title_question(chunk: SampledChunk, answers: Sequence[str], idf: Mapping[str, float],
                    rng: random.Random) -> tuple[str, str, str] | None:
    if not chunk.heading_path:
        return None
    answer = _best_sentence(answers, terms(clean_heading(chunk.heading_path[-1])), idf)
    query = heading_question(chunk.heading_path, chunk.lang, rng, answer)
    return None if query is None else ("title", query, answer)


def _sentence_question(chunk: SampledChunk, answers: Sequence[str], idf: Mapping[str, float],
                       rng: random.Random) -> tuple[str, str, str] | None:
    for sentence in answers:
        query = sentence_question(sentence, chunk.lang)
        if query is not None:
            return "sentence", query, sentence
    return None


def _terms_question(chunk: SampledChunk, answers: Sequence[str], idf: Mapping[str, float],
                    rng: random.Random, skip: frozenset[str] = frozenset()) -> tuple[str, str, str] | None:
    chosen = _distinctive_terms(chunk.content, idf, skip)
    if not chosen:
        return None
    shown = [_as_written(term, chunk.content) for term in chosen]
    query = terms_question(shown, chunk.heading_path, chunk.lang, rng)
    return "terms", query, _best_sentence(answers, set(chosen), idf)


def _distinctive_terms(content: str, idf: Mapping[str, float], skip: frozenset[str] = frozenset()) -> list[str]:
    """The chunk's `TERMS` most distinctive terms but `skip`, in the order the chunk has them."""
    text = content.lower()
    scored = []
    for term in terms(content):
        if term in skip:
            continue
        if _NUMBER.match(term) or (term.isascii() and len(term) < 3):  # "le", "gi": labels and units, not topics
            continue
        if term.isascii() and len(term) >= 10 and any(ch.isdigit() for ch in term):  # ids, hashes: "pmc5377511"
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
    chosen.sort(key=text.find)  # in the order the chunk has them: reads more like a question
    return chosen


def _as_written(term: str, content: str) -> str:
    """The term as the text writes it ("AMPA", not "ampa")."""
    found = re.search(re.escape(term), content, re.IGNORECASE)
    return found.group() if found else term


def _best_sentence(candidates: Sequence[str], query_terms: set[str], idf: Mapping[str, float]) -> str:
    total = sum(idf.get(t, 0.0) for t in query_terms) or 1.0
    best, best_score = candidates[0], 0.0
    for sentence in candidates:
        score = sum(idf.get(t, 0.0) for t in terms(sentence) & query_terms) / total
        if score > best_score:
            best, best_score = sentence, score
    return best
