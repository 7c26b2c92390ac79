"""Which script a text is written in: Chinese (CJK) or Latin. One definition for every part that asks
(the offline agent's wording, test-set generation, cross-language fusion)."""

from __future__ import annotations

import re

CJK = "cjk"
LATIN = "latin"

# CJK Unified Ideographs, Extension A and the compatibility ideographs: the hanzi of Chinese text.
CJK_CLASS = "\u3400-\u9fff\uf900-\ufaff"
_CJK = re.compile(f"[{CJK_CLASS}]")
_LATIN = re.compile("[A-Za-z]")


def is_chinese(ch: str) -> bool:
    """Whether the character `ch` is a Chinese character (hanzi)."""
    return bool(_CJK.fullmatch(ch))


def cjk_count(text: str) -> int:
    return len(_CJK.findall(text))


def language_of(text: str) -> str:
    """CJK when the text has Chinese characters and at least a quarter as many of them as Latin letters (a few
    Chinese characters amid English names still count: one hanzi says as much as a short word), else LATIN."""
    cjk = cjk_count(text)
    return CJK if cjk and cjk * 4 >= len(_LATIN.findall(text)) else LATIN


def has_word_in(text: str, language: str) -> bool:
    """Whether `text` holds any word in the script of `language` (a hanzi for CJK, a Latin letter for LATIN)."""
    return bool((_CJK if language == CJK else _LATIN).search(text))
