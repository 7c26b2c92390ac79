"""Comparing texts in Chinese and English: what the test-set filters and the answer scores agree on.

* Tokens (`match_tokens`): text NFKC-normalised (full-width letters and digits become ASCII) and lower-cased;
  each Chinese character is a token, and so is each run of other letters and digits (joined by `_ . ' -`,
  so `node_cpu_seconds_total`, `v1.2` and `on-call` are one token each). Punctuation, Markdown marks and
  whitespace are not tokens. So Chinese is compared by characters and English by words, and mixed text
  ("PodMemoryUsageHigh 告警") works alike.
* Whitespace normalisation (`find_normalised`): every run of whitespace counts as one space, none at the
  ends, and none between two Chinese characters or punctuation marks (a line wrapped inside a Chinese
  sentence, which a model quoting it joins up). Nothing else changes: a quote must keep the text's own
  characters and punctuation.
* Longest shared run (`longest_shared_run`): the longest sequence of consecutive tokens two texts share.
* Near-duplicates (`bigram_jaccard`): Jaccard similarity of the sets of character bigrams of the two texts'
  tokens written one after the other (no spaces).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

from ..languages import CJK_CLASS as _CJK_CLASS

# Whitespace between two of these is dropped: Chinese characters and Chinese (full-width) punctuation.
_CJK_WIDE = re.compile(f"[\u3000-\u303f{_CJK_CLASS}\uff00-\uffef]")
_TOKEN = re.compile(f"[{_CJK_CLASS}]|[^\\W_{_CJK_CLASS}]+(?:[_.'\\-][^\\W_{_CJK_CLASS}]+)*")


def match_tokens(text: str) -> list[str]:
    """The tokens of `text` (see the module docstring), in order."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text or "").lower())


def _normalised_with_map(text: str) -> tuple[str, list[int]]:
    """`text` with whitespace normalised, and for each character kept the index it came from."""
    out: list[str] = []
    where: list[int] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            j = i
            while j < n and text[j].isspace():
                j += 1
            between_cjk = bool(out) and _CJK_WIDE.match(out[-1]) and j < n and _CJK_WIDE.match(text[j])
            if out and j < n and not between_cjk:
                out.append(" ")
                where.append(i)
            i = j
            continue
        out.append(text[i])
        where.append(i)
        i += 1
    return "".join(out), where


def normalise_ws(text: str) -> str:
    return _normalised_with_map(text)[0]


def find_normalised(needle: str, haystack: str) -> tuple[int, int] | None:
    """Where `needle` occurs in `haystack` once whitespace is normalised in both: (start, end) of the
    matching stretch of `haystack` itself, so `haystack[start:end]` is the quote as the text has it."""
    wanted = normalise_ws(needle)
    if not wanted:
        return None
    text, where = _normalised_with_map(haystack)
    at = text.find(wanted)
    if at < 0:
        return None
    return where[at], where[at + len(wanted) - 1] + 1


def longest_shared_run(a: Sequence[str], b: Sequence[str]) -> int:
    """The length of the longest run of consecutive tokens that `a` and `b` share."""
    if not a or not b:
        return 0
    best = 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0] * (len(b) + 1)
        for j, y in enumerate(b, start=1):
            if x == y:
                current[j] = previous[j - 1] + 1
                if current[j] > best:
                    best = current[j]
        previous = current
    return best


def bigrams(text: str) -> frozenset[str]:
    compact = "".join(match_tokens(text))
    return frozenset(compact[i:i + 2] for i in range(len(compact) - 1)) or frozenset({compact})


def bigram_jaccard(a: str, b: str) -> float:
    x, y = bigrams(a), bigrams(b)
    return len(x & y) / len(x | y) if x | y else 1.0


def contains_tokens(text_tokens: Sequence[str], wanted: Sequence[str]) -> bool:
    """Whether `wanted` occurs in `text_tokens` as a contiguous run."""
    if not wanted:
        return False
    n = len(wanted)
    first = wanted[0]
    return any(text_tokens[i] == first and list(text_tokens[i:i + n]) == list(wanted)
               for i in range(len(text_tokens) - n + 1))


def token_f1(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """SQuAD's token-level F1 over two token lists (counts matter: a repeated token matches once per copy)."""
    common = sum((Counter(predicted) & Counter(gold)).values())
    if not common:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)
