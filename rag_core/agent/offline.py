"""Offline mode: with no chat model configured, answer by quoting the evidence.

The knowledge-base tool runs on the question (the same lookup path as always); the answer is the few
sentences of the returned evidence that best match the question, each quoted with its `[document_id]`.
Sentence relevance = the share of the question's terms the sentence contains, each term weighted by
how rare it is among the candidate sentences (idf), plus a small bonus for the evidence's rank. Terms
come from jieba for Chinese and from word tokens for English (lower-cased, stop words removed), so
Chinese, English and mixed questions ("CPU 使用率高怎么办") work alike.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..languages import CJK, CJK_CLASS, language_of
from ..records import Projected
from ..words import terms

MAX_QUOTES = 4
MAX_QUOTE_CHARS = 320
MIN_SENTENCE_CHARS = 12
RANK_BONUS = 0.12

_CJK = re.compile(f"[{CJK_CLASS}]")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_MARK = re.compile(r"^\s*(?:[-*+>]|\d+[.)])\s+")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
# Sentence ends: Chinese punctuation anywhere; ". ! ?" only before a space (not "v1.2" or "node.js").
_SENTENCE_END = re.compile(r"(?<=[。！？])|(?<=[.!?])\s+")

@dataclass(frozen=True)
class Quote:
    text: str
    document_id: str
    rank: int  # 0-based rank of the evidence item
    score: float


def sentences(content: str) -> list[str]:
    """Quotable sentences of a chunk: prose and table rows; no code blocks, headings or table rules."""
    out: list[str] = []
    lines = content.splitlines()
    fences = [line.strip() for line in lines if _FENCE.match(line)]
    # A chunk can start inside a code block (its overlap cut into one): an odd number of fences whose first
    # one is bare (a closing fence; opening fences usually name a language) means exactly that.
    in_code = len(fences) % 2 == 1 and fences[0] in ("```", "~~~")
    for raw in lines:
        if _FENCE.match(raw):
            in_code = not in_code
            continue
        line = raw.strip()
        if in_code or not line or line.startswith("#") or _TABLE_RULE.match(line):
            continue
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            line = " | ".join(c for c in cells if c)
            if line:
                out.append(line)
            continue
        line = _LIST_MARK.sub("", line)
        out.extend(s.strip() for s in _SENTENCE_END.split(line) if s and s.strip())
    # Chinese packs more into a character: a six-character sentence ("然后清理日志。") is a whole instruction.
    return [s for s in out if len(s) >= MIN_SENTENCE_CHARS or len(_CJK.findall(s)) >= 5]


def pick_quotes(question: str, items: Sequence[Projected], max_quotes: int = MAX_QUOTES) -> list[Quote]:
    """The sentences of the evidence that best answer the question, best first."""
    wanted = terms(question)
    pool: list[tuple[int, str, set[str]]] = []
    for rank, item in enumerate(items):
        for sentence in sentences(item.content):
            pool.append((rank, sentence, terms(sentence)))
    if not pool:
        return []
    df: dict[str, int] = {}
    for _, _, ts in pool:
        for t in ts & wanted:
            df[t] = df.get(t, 0) + 1
    idf = {t: math.log(1 + len(pool) / df.get(t, 0.5)) for t in wanted}
    total = sum(idf.values()) or 1.0
    scored: list[Quote] = []
    for rank, sentence, ts in pool:
        overlap = sum(idf[t] for t in ts & wanted) / total
        if overlap <= 0:
            continue
        scored.append(Quote(sentence, items[rank].document_id, rank, overlap + RANK_BONUS / (1 + rank)))
    if not scored:
        # No shared words (e.g. a paraphrase the dense channel matched): quote the best item's opening.
        rank, sentence, _ = pool[0]  # the pool is in evidence-rank order
        return [Quote(sentence, items[rank].document_id, rank, 0.0)]
    scored.sort(key=lambda q: (-q.score, q.rank))
    chosen: list[Quote] = []
    seen: set[str] = set()
    for q in scored:
        key = re.sub(r"\W+", "", q.text.lower())
        if key in seen:
            continue
        seen.add(key)
        chosen.append(q)
        if len(chosen) >= max_quotes:
            break
    return chosen


HINT_EN = ("To get written answers, set DASHSCOPE_API_KEY (DashScope, model qwen-plus), or set chat.provider = "
           "openai with chat.base-url, chat.model and OPENAI_API_KEY for any OpenAI-compatible server.")
HINT_ZH = ("如需由模型生成回答，请设置环境变量 DASHSCOPE_API_KEY（DashScope，默认模型 qwen-plus），或设置 "
           "chat.provider = openai 并配置 chat.base-url、chat.model 与 OPENAI_API_KEY（任意 OpenAI 兼容服务）。")


def compose(question: str, items: Sequence[Projected], max_quotes: int = MAX_QUOTES) -> str:
    """The offline answer: a label, the quotes with their citations, and how to configure a model."""
    zh = language_of(question) == CJK
    quotes = pick_quotes(question, items, max_quotes)
    if not quotes:
        head = (
            "**离线模式**（未配置对话模型）：知识库中没有找到与问题相关的内容。"
            if zh
            else "**Offline mode** (no chat model configured): the knowledge base has nothing that matches this "
            "question."
        )
        return f"{head}\n\n{HINT_ZH if zh else HINT_EN}"
    head = ("**离线模式**（未配置对话模型）：以下是知识库中与问题最相关的原文摘录，未经模型整理。" if zh else
            "**Offline mode** (no chat model configured): the most relevant sentences from the knowledge base, "
            "quoted as written, not composed by a model.")
    lines = []
    for q in quotes:
        text = q.text if len(q.text) <= MAX_QUOTE_CHARS else q.text[: MAX_QUOTE_CHARS - 1].rstrip() + "…"
        where = f" ({items[q.rank].location})" if items[q.rank].location else ""  # "p. 12": the page to open
        lines.append(f"- “{text}” [{q.document_id}]{where}" if zh else f"- \"{text}\" [{q.document_id}]{where}")
    return f"{head}\n\n" + "\n".join(lines) + f"\n\n{HINT_ZH if zh else HINT_EN}"
