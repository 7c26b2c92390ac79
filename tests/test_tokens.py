"""tokens.truncate: the longest start of a text within a number of tokens, whole characters only, counted by the
same tokenizer (Chinese, English, characters BPE splits over several tokens)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_core.tokens import TOKENIZER, count_tokens, truncate

ZH = "磁盘空间不足时，先删除 /var/log 下的旧日志，再用 logrotate 轮转。"
EN = "When the disk is almost full, delete the old logs under /var/log and rotate them with logrotate."
RARE = "𠮷野家的鿰字与🙂表情"  # characters the BPE writes as several byte tokens


@pytest.mark.parametrize("text", [ZH, EN, RARE])
def test_each_limit_keeps_the_longest_start_that_fits(text: str) -> None:
    total = count_tokens(text)
    previous = ""
    for limit in range(total + 2):
        kept, n = truncate(text, limit)
        assert text.startswith(kept) and "\ufffd" not in kept  # whole characters
        assert n == count_tokens(kept) <= limit
        assert len(kept) >= len(previous)  # more room never keeps less
        previous = kept
    assert truncate(text, total) == (text, total)
    assert truncate(text, 0) == ("", 0) and truncate("", 5) == ("", 0)


def test_a_character_split_between_tokens_is_left_out_whole() -> None:
    cuts = {truncate(RARE, limit)[0] for limit in range(count_tokens(RARE) + 1)}
    assert all(RARE.startswith(cut) for cut in cuts)
    assert len(cuts) < count_tokens(RARE) + 1  # some limits end inside a character and back off to the one before


def test_the_tokenizer_is_named() -> None:
    assert "qwen" in TOKENIZER
    assert count_tokens(EN) < len(EN) // 2 and count_tokens(ZH) < len(ZH)


@pytest.mark.slow  # a property test (Hypothesis)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([ZH, EN, RARE, "字", "é", " ", "\n", "word", "🙂"]), max_size=12).map("".join),
       st.integers(0, 80))
def test_truncate_never_splits_a_character_nor_passes_the_limit(text: str, limit: int) -> None:
    kept, n = truncate(text, limit)
    assert text.startswith(kept) and n == count_tokens(kept) <= limit
    assert (kept == text) == (count_tokens(text) <= limit)
