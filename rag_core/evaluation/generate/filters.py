"""The keep filters of a generated item, and the count of every rejection by reason.

An item is kept only when
* its answer is in its chunk once whitespace is normalised (`textmatch.find_normalised`); the answer kept is
  the chunk's own text of that stretch, so `eval` finds it verbatim;
* its question does not copy a long stretch of the chunk: the longest run of tokens the two share
  (`textmatch.longest_shared_run`: Chinese characters one by one, words otherwise) is at most
  `MAX_SHARED_RUN[lang]` (12 characters of Chinese, 6 words of English), by the question's language;
* it is not a near-duplicate of an item kept before: the character-bigram Jaccard similarity of the two
  questions is below `DUPLICATE_JACCARD` (0.8: rewordings of one question, such as "When does the X alert
  fire?" and "When is the X alert fired?", score above it; two questions that differ in one name, such as
  the P1 and the P2 response time, can too, and are then counted here);
* (model items) it is in the language asked for;
* (follow-up items) the follow-up does not stand alone (`stands_alone`): it repeats none of the first question's
  topic terms and reads as a follow-up to the offline rewrite (`retrieval.rewrite.is_follow_up`: short, and
  referring back with a pronoun or an elliptical opener, or with no topic of its own), so it is unanswerable without
  the turn before it, which is what such an item measures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ... import languages
from ...retrieval.rewrite import is_follow_up, topic_terms
from ...words import ordered_terms, terms
from ..textmatch import bigram_jaccard, find_normalised, longest_shared_run, match_tokens

MAX_SHARED_RUN = {"zh": 12, "en": 6}
DUPLICATE_JACCARD = 0.8

# Rejection reasons, counted in GenerationResult.rejected.
ANSWER_NOT_IN_CHUNK = "answer_not_in_chunk"
COPIED_QUESTION = "copied_question"
DUPLICATE = "duplicate"
WRONG_LANGUAGE = "wrong_language"
MALFORMED = "malformed"  # the model's reply was not the JSON asked for, after the retries
MODEL_FAILED = "model_failed"  # the model call failed (429, 5xx, timeout...) after the client's retries
ANSWERED_BY_KB = "answered_by_kb"  # a candidate for "should not be answerable" that the lookup's evidence answers
LOOKUP_FAILED = "lookup_failed"
NO_TERMS = "no_terms"  # offline: a chunk with neither a heading nor a distinctive term
STANDS_ALONE = "stands_alone"  # a follow-up that repeats its first question's topic, or does not refer back to it
REASONS = (ANSWER_NOT_IN_CHUNK, COPIED_QUESTION, DUPLICATE, WRONG_LANGUAGE, MALFORMED, MODEL_FAILED, ANSWERED_BY_KB,
           LOOKUP_FAILED, NO_TERMS, STANDS_ALONE)


def language_of(text: str) -> str:
    return "zh" if languages.language_of(text) == languages.CJK else "en"


def answer_in_chunk(answer: str, content: str) -> str | None:
    """The chunk's own text of the answer (whitespace as the chunk has it), or None when it is not there."""
    span = find_normalised(answer, content)
    return None if span is None else content[span[0]:span[1]]


def shared_run(question: str, content: str) -> int:
    return longest_shared_run(match_tokens(question), match_tokens(content))


def copies_chunk(question: str, content: str, lang: str) -> bool:
    return shared_run(question, content) > MAX_SHARED_RUN.get(lang, MAX_SHARED_RUN["en"])


def stands_alone(follow_up: str, first: str) -> bool:
    """Whether a follow-up would be understood without the question before it (see the module docstring)."""
    topic = set(topic_terms(first))
    own = terms(follow_up) | set(ordered_terms(follow_up))
    lower = follow_up.lower()
    repeated = topic & own or {t for t in topic if not t.isascii() and t in lower}  # a Chinese term cut otherwise
    return bool(repeated) or not is_follow_up(follow_up)


class KeepFilters:
    """The questions kept so far (for near-duplicates) and the rejections counted by reason."""

    def __init__(self) -> None:
        self.kept: list[str] = []
        self.rejected: Counter[str] = Counter()

    def reject(self, reason: str) -> None:
        self.rejected[reason] += 1

    def duplicate_of(self, question: str, others: Sequence[str] = ()) -> str | None:
        """The kept question this one nearly repeats, or None."""
        return next((q for q in [*self.kept, *others] if bigram_jaccard(q, question) >= DUPLICATE_JACCARD), None)

    def keep(self, question: str) -> None:
        self.kept.append(question)

    def counts(self) -> dict[str, int]:
        return {reason: self.rejected[reason] for reason in REASONS if self.rejected[reason]}
