"""Offline mode: with no chat model configured, answer by quoting the evidence.

The knowledge-base tool runs on the question (the same lookup path as always); the answer is the few
sentences of the returned evidence that best match the question, each quoted with its `[document_id]`.
Sentence relevance = the share of the question's terms the sentence contains, each term weighted by
how rare it is among the candidate sentences (idf), plus a small bonus for the evidence's rank. Terms
come from jieba for Chinese and from word tokens for English (lower-cased, stop words removed), so
Chinese, English and mixed questions ("CPU 使用率高怎么办") work alike.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..languages import CJK, CJK_CLASS, language_of
from ..records import Projected

MAX_QUOTES = 4
MAX_QUOTE_CHARS = 320
MIN_SENTENCE_CHARS = 12
RANK_BONUS = 0.12

_CJK = re.compile(f"[{CJK_CLASS}]")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*[A-Za-z0-9]|[A-Za-z]|\d+(?:\.\d+)?%?")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_MARK = re.compile(r"^\s*(?:[-*+>]|\d+[.)])\s+")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
# Sentence ends: Chinese punctuation anywhere; ". ! ?" only before a space (not "v1.2" or "node.js").
_SENTENCE_END = re.compile(r"(?<=[。！？])|(?<=[.!?])\s+")

_EN_STOP = frozenset("""
a an the and or but if then else of to in on at by for with from as is are was were be been being it its this that
these those there here what which who whom whose when where why how do does did done can could should would will
shall may might must i you he she we they me my your our their us them not no yes so than too very just also about
into over under up down out off again more most some any all each both few other such only own same s t don
please tell me know need want get got use used using via per vs etc
""".split())
_ZH_STOP = frozenset("""
的 了 是 在 和 与 或 及 等 也 都 就 而 并 把 被 让 给 对 从 向 为 以 于 之 其 这 那 这个 那个 这些 那些 什么 怎么
怎样 如何 为什么 哪些 哪个 多少 吗 呢 吧 啊 呀 我 你 他 她 它 我们 你们 他们 一个 一下 可以 需要 应该 是否 有没有
如果 时候 时 后 前 中 上 下 里 请问 请 要 会 能 有 没有 还 吗？ 怎么办 做 进行
""".split())

_jieba_ready = False


def _jieba():  # noqa: ANN202 - imported lazily: loading its dictionary takes a second
    global _jieba_ready
    import jieba

    if not _jieba_ready:
        jieba.setLogLevel(logging.WARNING)  # it announces "Building prefix dict" on stderr otherwise
        _jieba_ready = True
    return jieba


def terms(text: str) -> set[str]:
    """Content terms: English words (lower-case) and Chinese words of two or more characters."""
    out: set[str] = set()
    for word in _WORD.findall(text):
        w = word.lower().strip(".-")
        if w and w not in _EN_STOP and (len(w) > 1 or w.isdigit()):
            out.add(w)
            if "_" in w or "-" in w:  # node_cpu_seconds_total also matches "cpu", "seconds"
                out.update(p for p in re.split(r"[_\-]", w) if len(p) > 1 and p not in _EN_STOP)
    if _CJK.search(text):
        for span in re.findall(f"[{CJK_CLASS}]+", text):
            for word in _jieba().lcut_for_search(span):
                if len(word) >= 2 and word not in _ZH_STOP:
                    out.add(word)
    return out


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
