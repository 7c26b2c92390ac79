"""Content terms of a text, in Chinese and English: what offline answers, offline test-set generation and the offline
rewrite of a follow-up question compare. English: word tokens, lower-cased, stop words removed (an identifier such as
`node_cpu_seconds_total` also gives its parts); Chinese: jieba's words of two or more characters, stop words removed.
"""

from __future__ import annotations

import logging
import re

from .languages import CJK_CLASS

_CJK = re.compile(f"[{CJK_CLASS}]")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*[A-Za-z0-9]|[A-Za-z]|\d+(?:\.\d+)?%?")

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


def cut(text: str) -> list[str]:
    """jieba's plain cut of Chinese text (its words in order)."""
    return list(_jieba().lcut(text))


def ordered_terms(text: str) -> list[str]:
    """The content terms of `text` in the order they first appear (jieba's plain cut for Chinese, not its
    overlapping search cut): what a reader sees as the text's words."""
    out: dict[str, None] = {}
    for piece in re.split(f"([{CJK_CLASS}]+)", text):
        if not piece:
            continue
        if _CJK.match(piece):
            out.update(dict.fromkeys(w for w in _jieba().lcut(piece) if len(w) >= 2 and w not in _ZH_STOP))
            continue
        for word in _WORD.findall(piece):
            w = word.lower().strip(".-")
            if w and w not in _EN_STOP and (len(w) > 1 or w.isdigit()):
                out[w] = None
    return list(out)
