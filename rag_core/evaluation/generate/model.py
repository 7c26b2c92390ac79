"""The model generator: one question per sampled chunk, from a chat model (`ports.ChatModel`, passed in).

For each chunk in the seeded round-robin order (sampling.py), the model is asked (prompts.QUESTION, at
temperature 0) for one question a user would ask that the chunk answers, in the chunk's language (or the one
`lang` forces), with the answer quoted verbatim from the chunk, as a JSON object. The keep filters
(filters.py) decide; the walk goes on until `size` items are kept or every chunk was tried. A model failure
is one chunk's (modelcalls.py): counted, never the end of the run, unless no other chunk could escape it.

Follow-up items (`follow_ups`, a share of the set; none by default): a chunk that comes to a follow-up's place
(sampling.follow_up_slot) is asked for a first question and a follow-up that only makes sense after it, with the
follow-up's answer quoted (prompts.FOLLOW_UP). Both questions pass the language and copying filters, the follow-up
must not stand alone (`filters.stands_alone`: it repeats a topic term of the first question, or does not refer back
to it), and the item is the follow-up with the first question as its `history` (kind "follow_up").

"Should not be answerable" items (`unanswerable`, a share of `size`): the model gets excerpts of a few
sampled chunks (their documents' subject) and writes a question on that subject that the excerpts do not
answer (prompts.UNANSWERABLE). Then it is *checked by a lookup*: the question goes through `lookup` — the
one lookup path (`KnowledgeRetriever.lookup`), so the evidence is exactly what the agent would get for it —
and the model reads that evidence and says whether any of it answers the question, quoting the sentence
when it does (prompts.CHECK). The candidate is kept only when it says no; when it says yes (whether or not
its quote is found in the evidence) it is rejected as `answered_by_kb`. What this proves, and what it does
not: that one lookup with the knowledge base's settings finds nothing that, to the model, answers the
question; not that no chunk anywhere answers it (a chunk the lookup misses is not read). Every check (the
evidence keys read, the verdict, the quote) is recorded in the set's meta, and a person reviewing the set
can unmark any item.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from ...errors import EvaluationError, RagError
from ...ports import ChatModel, ChunkStore
from ...records import ConversationTurn
from ..modelcalls import JsonAsker, JsonReply, text_fields
from ..runner import EvalProgress
from ..testsets import TestItem
from . import prompts
from .filters import (
    ANSWER_NOT_IN_CHUNK,
    ANSWERED_BY_KB,
    COPIED_QUESTION,
    DUPLICATE,
    LOOKUP_FAILED,
    STANDS_ALONE,
    WRONG_LANGUAGE,
    KeepFilters,
    answer_in_chunk,
    copies_chunk,
    language_of,
    stands_alone,
)
from .result import GenerationProgress, GenerationResult, shortfall_warning
from .sampling import (
    LANGS,
    SampledChunk,
    check_size,
    follow_up_count,
    follow_up_slot,
    quotable_sentences,
    read_chunks,
    sample_order,
)

CONTEXT_CHUNKS = 3  # excerpts shown for one "should not be answerable" question
UNANSWERABLE_TRIES = 3  # candidates per such item wanted, at most
Lookup = Callable[[str], Any]  # query -> LookupResult (KnowledgeRetriever.lookup)


def generate_with_model(store: ChunkStore, model: ChatModel, *, size: int, seed: int = 0,
                        per_doc_max: int | None = None, lang: str = "auto", lookup: Lookup | None = None,
                        unanswerable: float = 0.1, follow_ups: float = 0.0, retries: int = 2,
                        item_deadline: float = 120.0, kb_name: str = "", progress: GenerationProgress | None = None,
                        clock: Callable[[], float] = time.monotonic) -> GenerationResult:
    """`size` items from the knowledge base behind `store`, `round(size * unanswerable)` of them "should not be
    answerable" (they need `lookup`) and `round(size * follow_ups)` follow-ups (see the module docstring).
    `retries`: how often a reply that is not the
    JSON asked for is asked again; `item_deadline`: seconds one item may take, its model calls and their
    retries included."""
    if lang not in LANGS:
        raise EvaluationError(f"--lang {lang!r}: use one of {', '.join(LANGS)}.")
    if not 0.0 <= unanswerable < 1.0:
        raise EvaluationError(f"The share of items that should not be answerable must lie in [0, 1) (got "
                              f"{unanswerable}).")
    started = time.perf_counter()
    report = progress or (lambda _: None)
    wanted_unanswerable = round(size * unanswerable) if isinstance(size, int) and size > 0 else 0
    wanted_follow_ups = follow_up_count(size, follow_ups, size - wanted_unanswerable)
    if wanted_unanswerable and lookup is None:
        raise EvaluationError("Items that should not be answerable are checked by a lookup: pass the knowledge "
                              "base's lookup, or ask for none (unanswerable = 0).")
    by_doc = read_chunks(store, kb_name, lambda done, total: report(EvalProgress("reading", done, total,
                                                                                 "reading the documents")))
    eligible = {d: [c for c in cs if quotable_sentences(c.content)] for d, cs in by_doc.items()}
    order = sample_order(eligible, seed, per_doc_max)
    check_size(size, order, len(by_doc), per_doc_max, kb_name, needed=size - wanted_unanswerable)
    run = _Run(JsonAsker(model, retries=retries, deadline=item_deadline, clock=clock), lang, size, report)

    for chunk in order:
        if len(run.items) >= size - wanted_unanswerable:
            break
        run.tried += 1
        if follow_up_slot(len(run.items), size - wanted_unanswerable, wanted_follow_ups):
            run.follow_up(chunk)
        else:
            run.question(chunk)
    answerable = len(run.items)
    for n in range(wanted_unanswerable * UNANSWERABLE_TRIES):
        if len(run.items) - answerable >= wanted_unanswerable:
            break
        context = [order[(n * CONTEXT_CHUNKS + k) % len(order)] for k in range(CONTEXT_CHUNKS)]
        run.unanswerable(list(dict.fromkeys(context)), lookup)  # type: ignore[arg-type]
    if not run.items:
        reasons = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in run.filters.counts().items())
        first = f"; first failure: {run.failures[0]['detail']}" if run.failures else ""
        raise EvaluationError(f"No item was kept from {run.tried} chunks asked about (rejected: {reasons}){first}.")
    warnings = []
    if answerable < size - wanted_unanswerable:
        warnings.append(shortfall_warning(size - wanted_unanswerable, answerable, run.filters.counts()))
    if len(run.items) - answerable < wanted_unanswerable:
        made = len(run.items) - answerable
        warnings.append(
            f"Asked for {wanted_unanswerable} items that should not be answerable, made {made} from "
            f"{wanted_unanswerable * UNANSWERABLE_TRIES} candidates: the others were answered by the knowledge base's "
            "evidence or rejected (see the checks)."
        )
    return GenerationResult(tuple(run.items), size, "model", seed, kb_name, lang, per_doc_max, run.filters.counts(),
                            len(by_doc), sum(len(cs) for cs in by_doc.values()), len(order), run.tried,
                            time.perf_counter() - started, model=model.describe(),
                            prompt_version=prompts.PROMPT_VERSION, failures=tuple(run.failures),
                            checks=tuple(run.checks), warnings=tuple(warnings), follow_up_share=follow_ups)


class _Run:
    """The state of one generation: kept items, filters and their counts, failures, checks, progress."""

    def __init__(self, asker: JsonAsker, lang: str, size: int, report: GenerationProgress) -> None:
        self.asker = asker
        self.lang = lang
        self.size = size
        self.report = report
        self.filters = KeepFilters()
        self.items: list[TestItem] = []
        self.failures: list[dict[str, Any]] = []
        self.checks: list[dict[str, Any]] = []
        self.tried = 0

    def _failed(self, reply: JsonReply, source: str) -> None:
        assert reply.failure is not None
        self.filters.reject(reply.failure)
        self.failures.append({"source": source, "reason": reply.failure, "kind": reply.kind, "detail": reply.detail,
                              "replies": list(reply.raw)})

    def _progress(self) -> None:
        rejected = sum(self.filters.rejected.values())
        self.report(EvalProgress("generating", len(self.items), self.size,
                                 f"{self.tried} chunks asked, {rejected} rejected"))

    def _acceptable(self, question: str, lang: str, copied_from: str, *also: str) -> bool:
        """Language, copying and near-duplicates (of `question`; `also`, the questions asked before it, only for
        language and copying): rejected (and counted) or not."""
        if any(language_of(q) != lang for q in (*also, question)):
            self.filters.reject(WRONG_LANGUAGE)
        elif any(copies_chunk(q, copied_from, lang) for q in (*also, question)):
            self.filters.reject(COPIED_QUESTION)
        elif self.filters.duplicate_of(" ".join((*also, question))) is not None:
            self.filters.reject(DUPLICATE)
        else:
            return True
        return False

    def question(self, chunk: SampledChunk) -> None:
        lang = chunk.lang if self.lang == "auto" else self.lang
        reply = self.asker.ask(prompts.question_messages(chunk, lang),
                               lambda v: text_fields(v, "question", "answer"), prompts.correction(lang))
        if reply.value is None:
            self._failed(reply, chunk.evidence_key)
        else:
            question = " ".join(reply.value["question"].split())
            quoted = answer_in_chunk(reply.value["answer"], chunk.content)
            if quoted is None:
                self.filters.reject(ANSWER_NOT_IN_CHUNK)
            elif self._acceptable(question, lang, chunk.content):
                self.filters.keep(question)
                self.items.append(TestItem(id=f"g{len(self.items) + 1:03d}", query=question, relevant=(chunk.doc_id,),
                                           answers=(quoted,), source=chunk.evidence_key, lang=lang, generator="model",
                                           kind="question"))
        self._progress()

    def follow_up(self, chunk: SampledChunk) -> None:
        lang = chunk.lang if self.lang == "auto" else self.lang
        reply = self.asker.ask(prompts.follow_up_messages(chunk, lang),
                               lambda v: text_fields(v, "question", "follow_up", "answer"), prompts.correction(lang))
        if reply.value is None:
            self._failed(reply, chunk.evidence_key)
            return self._progress()
        first, question = (" ".join(reply.value[k].split()) for k in ("question", "follow_up"))
        quoted = answer_in_chunk(reply.value["answer"], chunk.content)
        if quoted is None:
            self.filters.reject(ANSWER_NOT_IN_CHUNK)
        elif not self._acceptable(question, lang, chunk.content, first):
            pass  # counted by its reason
        elif stands_alone(question, first):
            self.filters.reject(STANDS_ALONE)
        else:
            self.filters.keep(f"{first} {question}")
            self.items.append(TestItem(id=f"g{len(self.items) + 1:03d}", query=question, relevant=(chunk.doc_id,),
                                       answers=(quoted,), source=chunk.evidence_key, lang=lang, generator="model",
                                       kind="follow_up", history=(ConversationTurn("user", first),)))
        self._progress()

    def unanswerable(self, context: list[SampledChunk], lookup: Lookup) -> None:
        lang = self.lang if self.lang != "auto" else max(("zh", "en"), key=[c.lang for c in context].count)
        sources = [c.evidence_key for c in context]
        reply = self.asker.ask(prompts.unanswerable_messages(context, lang), lambda v: text_fields(v, "question"),
                               prompts.correction(lang))
        if reply.value is None:
            self._failed(reply, ", ".join(sources))
            return self._progress()
        question = " ".join(reply.value["question"].split())
        if not self._acceptable(question, lang, "\n".join(c.content for c in context)):
            return self._progress()
        try:
            passages = [(p.document_id, p.content) for p in lookup(question).projection.items]
        except RagError as exc:
            self.filters.reject(LOOKUP_FAILED)
            self.failures.append({"source": ", ".join(sources), "reason": LOOKUP_FAILED, "kind": "", "detail": str(exc),
                                  "replies": list(reply.raw)})
            return self._progress()
        verdict = self.asker.ask(prompts.check_messages(question, passages, lang), _check_verdict,
                                 prompts.correction(lang))
        check: dict[str, Any] = {"question": question, "context": sources, "evidence": [k for k, _ in passages]}
        if verdict.value is None:
            self.checks.append({**check, "verdict": None, "kept": False})
            self._failed(verdict, ", ".join(sources))
            return self._progress()
        answered = verdict.value["answered"]
        quote = str(verdict.value.get("quote") or "")
        check.update(verdict="answered" if answered else "not answered", quote=quote, kept=not answered,
                     quote_found=bool(quote) and any(answer_in_chunk(quote, c) for _, c in passages))
        self.checks.append(check)
        if answered:
            self.filters.reject(ANSWERED_BY_KB)
        else:
            self.filters.keep(question)
            self.items.append(TestItem(id=f"g{len(self.items) + 1:03d}", query=question, relevant=(), source=None,
                                       lang=lang, generator="model", kind="unanswerable", should_answer=False))
        self._progress()


def _check_verdict(value: Mapping[str, Any]) -> str | None:
    if not isinstance(value.get("answered"), bool):
        return '"answered" must be true or false'
    if value.get("quote") is not None and not isinstance(value.get("quote"), str):
        return '"quote" must be a string'
    return None
