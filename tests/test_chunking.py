"""Unit and property tests for rag_core.chunking."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_core.chunking import (
    BOUNDARY_FIRST,
    BOUNDARY_OVERLAP,
    BOUNDARY_SECTION,
    NO_OVERLAP_DISABLED,
    NO_OVERLAP_PREFIX,
    NO_OVERLAP_SHORT_PREVIOUS,
    NO_OVERLAP_WHITESPACE_GAP,
    chunk_text,
    chunks_to_json,
    overlap_summary,
)
from rag_core.errors import ChunkingError, RagError
from rag_core.records import Chunk

KNOWN_NO_OVERLAP = {NO_OVERLAP_DISABLED, NO_OVERLAP_SHORT_PREVIOUS, NO_OVERLAP_WHITESPACE_GAP}


def check_invariants(text: str, chunks: list[Chunk], max_size: int, overlap: int) -> None:
    """Everything that must hold for any input; shared by unit, property and golden tests."""
    covered = bytearray(len(text))
    prev: Chunk | None = None
    for i, c in enumerate(chunks):
        assert c.chunk_index == i
        assert text[c.start : c.end] == c.text
        assert 0 < len(c.text) <= max_size
        assert not c.text[0].isspace() and not c.text[-1].isspace()
        assert c.title == (c.heading_path[-1] if c.heading_path else "")
        for k in range(c.start, c.end):
            covered[k] = 1
        if prev is None:
            assert c.boundary == BOUNDARY_FIRST and c.overlap_chars == 0
        else:
            assert c.start > prev.start and c.end > prev.end  # monotonic, always new text
            assert c.overlap_chars == max(0, prev.end - c.start)
            assert c.overlap_chars <= overlap
            if c.boundary == BOUNDARY_OVERLAP:
                assert c.overlap_chars > 0
                assert c.heading_path == prev.heading_path
            else:
                assert c.overlap_chars == 0
                if c.boundary != BOUNDARY_SECTION:
                    assert c.boundary.startswith(NO_OVERLAP_PREFIX)
                    reason = c.boundary.removeprefix(NO_OVERLAP_PREFIX)
                    assert reason in KNOWN_NO_OVERLAP
                    if reason == NO_OVERLAP_DISABLED:
                        assert overlap == 0
                    elif reason == NO_OVERLAP_SHORT_PREVIOUS:
                        assert len(prev.text) == 1
                    else:
                        assert c.start - prev.end >= max_size - 1
                        assert text[prev.end : c.start].isspace()
        prev = c
    for k, ch in enumerate(text):
        if not ch.isspace():
            assert covered[k], f"non-whitespace character {k} ({ch!r}) is in no chunk"


def chunk_and_check(text: str, max_size: int = 800, overlap: int = 100) -> list[Chunk]:
    chunks = chunk_text(text, max_size, overlap)
    check_invariants(text, chunks, max_size, overlap)
    return chunks


# --- parameters and trivial input --------------------------------------------------------------


@pytest.mark.parametrize(
    ("max_size", "overlap", "fragment"),
    [
        (0, 0, "at least 1"),
        (-5, 0, "at least 1"),
        (100, -1, "negative"),
        (100, 100, "smaller than the chunk size"),
        (100, 150, "smaller than the chunk size"),
        (10.5, 1, "whole number"),
        (True, 0, "whole number"),
        (100, "10", "whole number"),
    ],
)
def test_invalid_parameters_raise_chunking_error(max_size: object, overlap: object, fragment: str) -> None:
    with pytest.raises(ChunkingError, match=fragment) as info:
        chunk_text("some text", max_size, overlap)  # type: ignore[arg-type]
    assert isinstance(info.value, RagError)


def test_invalid_parameters_raise_even_for_empty_text() -> None:
    with pytest.raises(ChunkingError):
        chunk_text("", 10, 10)


@pytest.mark.parametrize("text", ["", " ", "\n\n\n", " \t \n  \n"])
def test_empty_or_whitespace_text_gives_no_chunks(text: str) -> None:
    assert chunk_text(text) == []


def test_short_text_is_one_trimmed_chunk() -> None:
    text = "\n\n  Hello world.  \n\n"
    [chunk] = chunk_and_check(text)
    assert chunk.text == "Hello world."
    assert (chunk.start, chunk.end) == (4, 16)
    assert chunk.title == "" and chunk.heading_path == ()
    assert chunk.boundary == BOUNDARY_FIRST and chunk.overlap_chars == 0


def test_defaults_are_800_and_100() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(200))
    chunks = chunk_and_check(text)
    assert max(len(c.text) for c in chunks) <= 800
    assert len(chunks[0].text) > 700
    assert all(0 < c.overlap_chars <= 100 for c in chunks[1:])


# --- headings and sections ---------------------------------------------------------------------


def test_heading_paths_titles_and_heading_lines_in_text() -> None:
    text = (
        "Preamble before any heading.\n\n"
        "# Runbook\n\nIntro.\n\n"
        "## Commands\n\nSome commands.\n\n"
        "### Verify\n\nVerify it.\n\n"
        "## Rollback ##\n\nRoll back.\n\n"
        "# Appendix\nLast words.\n"
    )
    chunks = chunk_and_check(text)
    assert [c.heading_path for c in chunks] == [
        (),
        ("Runbook",),
        ("Runbook", "Commands"),
        ("Runbook", "Commands", "Verify"),
        ("Runbook", "Rollback"),
        ("Appendix",),
    ]
    assert [c.title for c in chunks] == ["", "Runbook", "Commands", "Verify", "Rollback", "Appendix"]
    assert [c.boundary for c in chunks] == ["first"] + ["section"] * 5
    # The first chunk of a section starts at its heading line, so the heading words are embedded.
    assert chunks[1].text == "# Runbook\n\nIntro."
    assert chunks[4].text.startswith("## Rollback ##")
    assert chunks[5].text == "# Appendix\nLast words."
    assert chunks[3].heading_path_text == "Runbook > Commands > Verify"


def test_heading_syntax_rules() -> None:
    text = (
        "#comment without a space\n"
        "####### seven hashes\n"
        "    # four spaces is indented code\n"
        "#\n"
        "# #\n"
        "body\n\n"
        "   ### Three spaces ok ###   \n"
        "text\n\n"
        "#\tTabbed\n"
        "more\n\n"
        "## C# is a language\n"
        "end\n"
    )
    chunks = chunk_and_check(text)
    assert [c.heading_path for c in chunks] == [
        (),
        ("Three spaces ok",),
        ("Tabbed",),
        ("Tabbed", "C# is a language"),
    ]
    assert chunks[0].text.startswith("#comment without a space")
    assert chunks[1].text.startswith("### Three spaces ok ###")  # the indent before "#" is trimmed


@pytest.mark.parametrize(
    ("fence", "close"),
    [("```", "```"), ("~~~", "~~~"), ("````", "`````"), ("```python", "```"), ("~~~~ text", "~~~~"),
     ("  ```", "```  ")],
)
def test_headings_inside_fences_do_not_split(fence: str, close: str) -> None:
    text = (
        "# Setup\n\nInstall it:\n\n"
        f"{fence}\n# this is a shell comment\n## not a heading either\necho ok\n{close}\n\n"
        "After the code.\n\n"
        "## Next\n\nDone.\n"
    )
    chunks = chunk_and_check(text)
    assert [c.heading_path for c in chunks] == [("Setup",), ("Setup", "Next")]
    assert "# this is a shell comment" in chunks[0].text
    assert "After the code." in chunks[0].text


def test_fence_closes_only_with_same_char_and_enough_length() -> None:
    text = (
        "# A\n\n"
        "````\n```\n# inside a four-backtick fence\n~~~~\n# still inside\n````\n\n"
        "~~~\n```\n# inside tilde fence\n~~~\n\n"
        "## B\n\nbody\n"
    )
    chunks = chunk_and_check(text)
    assert [c.heading_path for c in chunks] == [("A",), ("A", "B")]


def test_backticks_in_info_string_do_not_open_a_fence() -> None:
    text = "```inline``` code\n# Real heading\nbody\n"
    chunks = chunk_and_check(text)
    assert [c.heading_path for c in chunks] == [(), ("Real heading",)]


def test_unclosed_fence_runs_to_the_end() -> None:
    text = "# Top\n\nText.\n\n```\n# comment\n## more\n"
    chunks = chunk_and_check(text)
    assert [c.heading_path for c in chunks] == [("Top",)]


def test_heading_only_sections_join_the_following_section() -> None:
    text = "# Runbook\n\n## Commands\n\n### Verify\nRun `make verify`.\n\n## Rollback\nRevert.\n"
    chunks = chunk_and_check(text)
    assert len(chunks) == 2
    first = chunks[0]
    assert first.text == "# Runbook\n\n## Commands\n\n### Verify\nRun `make verify`."
    assert first.heading_path == ("Runbook", "Commands", "Verify")
    assert first.title == "Verify"
    assert chunks[1].heading_path == ("Runbook", "Rollback")


def test_heading_only_run_takes_the_last_headings_path() -> None:
    text = "## Deep first\n# Shallow\nbody\n"
    [chunk] = chunk_and_check(text)
    assert chunk.heading_path == ("Shallow",)
    assert chunk.text == text.strip()


def test_trailing_heading_only_section_is_its_own_chunk() -> None:
    text = "# Doc\nbody\n\n## See also\n\n### Nothing here\n\n"
    chunks = chunk_and_check(text)
    assert [c.text for c in chunks] == ["# Doc\nbody", "## See also\n\n### Nothing here"]
    assert chunks[1].heading_path == ("Doc", "See also", "Nothing here")


def test_no_heading_only_chunk_when_the_body_is_long() -> None:
    body = " ".join(f"Word{i} is a sentence." for i in range(40))
    text = f"# Title\n\n{body}\n"
    chunks = chunk_and_check(text, 120, 20)
    assert chunks[0].text.startswith("# Title\n\nWord0")
    assert all(c.heading_path == ("Title",) for c in chunks)
    assert all(not c.text.startswith("#") for c in chunks[1:])  # the heading line is not repeated


def test_heading_block_longer_than_a_chunk_is_split() -> None:
    text = "# " + "x" * 50 + "\n## " + "y" * 50 + "\nbody text\n"
    chunks = chunk_and_check(text, 30, 5)
    assert chunks[-1].heading_path == ("x" * 50, "y" * 50)


def test_overlap_never_crosses_sections() -> None:
    para = "This sentence has some words. " * 8
    text = f"# One\n\n{para}\n\n# Two\n\n{para}\n"
    chunks = chunk_and_check(text, 100, 40)
    two = next(c for c in chunks if c.heading_path == ("Two",))
    assert two.boundary == BOUNDARY_SECTION and two.overlap_chars == 0
    assert two.text.startswith("# Two")


def test_carriage_returns_are_handled_gracefully() -> None:
    # Loaders normalise to LF; a stray CRLF document must still chunk with exact offsets and clean titles.
    lf = "# Title\n\nFirst paragraph.\n\n## Sub ##\n\nSecond.\n\n```\n# code\n```\n"
    crlf = lf.replace("\n", "\r\n")
    lf_chunks = chunk_and_check(lf)
    crlf_chunks = chunk_and_check(crlf)
    assert [c.heading_path for c in crlf_chunks] == [c.heading_path for c in lf_chunks]
    assert [c.text.replace("\r", "") for c in crlf_chunks] == [c.text for c in lf_chunks]
    assert all("\r" not in t for c in crlf_chunks for t in c.heading_path)


# --- filling and splitting ---------------------------------------------------------------------


def test_paragraphs_are_packed_greedily_and_kept_whole() -> None:
    paragraphs = [f"Paragraph {i} " + "a" * 20 + "." for i in range(10)]  # 33-34 chars each
    text = "\n\n".join(paragraphs)
    chunks = chunk_and_check(text, 100, 0)
    for c in chunks:
        # Every chunk is a whole number of paragraphs.
        assert c.text.split("\n\n") == [p for p in paragraphs if p in c.text]
    assert [c.text.count("\n\n") + 1 for c in chunks] == [2, 2, 2, 2, 2]  # 2 x 34 + 2 fits, 3 do not


def test_paragraph_that_does_not_fit_starts_a_new_chunk() -> None:
    text = "Short one.\n\n" + "Long paragraph sentence. " * 3 + "\n\nTail."
    chunks = chunk_and_check(text, 80, 0)
    assert chunks[0].text == "Short one."


def test_oversized_paragraph_splits_at_sentence_ends() -> None:
    sentences = [f"Sentence {i} has a few words in it." for i in range(30)]
    text = " ".join(sentences)
    chunks = chunk_and_check(text, 200, 0)
    assert len(chunks) > 3
    for c in chunks:
        assert c.text.endswith(".")
        assert c.text.startswith("Sentence")


def test_latin_period_needs_following_space() -> None:
    # Were "3." a sentence end, the first chunk would be "x 3."; it is not, so the split is at a space.
    chunks = chunk_and_check("x 3.1415926535 y", 9, 0)
    assert [c.text for c in chunks] == ["x", "3.1415926", "535 y"]
    chunks = chunk_and_check("x 3. 1415926535 y", 9, 0)
    assert chunks[0].text == "x 3."


def test_newlines_count_as_sentence_ends() -> None:
    lines = [f"- item {i} without punctuation" for i in range(20)]
    text = "\n".join(lines)
    chunks = chunk_and_check(text, 100, 0)
    for c in chunks:
        assert all(line in lines for line in c.text.split("\n"))


def test_no_sentence_end_splits_at_whitespace() -> None:
    text = " ".join(f"word{i}" for i in range(100))
    chunks = chunk_and_check(text, 50, 0)
    for c in chunks:
        assert c.end == len(text) or text[c.end].isspace()
        assert c.start == 0 or text[c.start - 1].isspace()


def test_no_whitespace_splits_hard_at_max_size() -> None:
    text = "x" * 250
    chunks = chunk_and_check(text, 100, 0)
    assert [len(c.text) for c in chunks] == [100, 100, 50]


def test_hard_split_with_overlap_still_respects_max_size() -> None:
    text = "y" * 1000
    chunks = chunk_and_check(text, 100, 30)
    assert all(len(c.text) <= 100 for c in chunks)
    assert all(c.overlap_chars == 30 for c in chunks[1:])
    assert chunks[1].start == 70


def test_max_size_one_is_valid() -> None:
    text = "ab c\n\n中文。"
    chunks = chunk_and_check(text, 1, 0)
    assert "".join(c.text for c in chunks) == "abc中文。"


def test_sentence_ends_with_closing_quotes() -> None:
    text = "他说：“好的。”然后离开了。" * 10
    chunks = chunk_and_check(text, 40, 0)
    assert all(c.text.endswith("。”") or c.text.endswith("了。") for c in chunks)


# --- overlap -----------------------------------------------------------------------------------


def test_chinese_chunks_ending_in_full_stop_still_overlap() -> None:
    # The seed returned an empty overlap whenever a chunk ended in 。; here every boundary overlaps.
    text = "".join(f"这是第{i}个句子，用来测试分块重叠。" for i in range(80))
    chunks = chunk_and_check(text, 100, 30)
    assert len(chunks) > 5
    for prev, c in zip(chunks, chunks[1:]):
        assert prev.text.endswith("。")
        assert c.boundary == BOUNDARY_OVERLAP and c.overlap_chars > 0
        assert text[c.start - 1] == "。"  # the overlap starts at a sentence start
        assert c.text.startswith("这是第")


def test_overlap_starts_at_sentence_in_latter_half_of_window() -> None:
    # Window is the last 40 characters of the first chunk; the only sentence start in it is late.
    first = "a" * 70 + " Bb cc dd ee ff gg. Tail ends here."  # 105 chars, no blank lines
    text = first + "\n\nNext paragraph " + "z" * 100
    chunks = chunk_and_check(text, 120, 40)
    c = chunks[1]
    assert chunks[0].end == len(first)
    window_start = chunks[0].end - 40
    sentence = first.index("Tail")
    assert sentence > window_start + 20  # in the latter half
    assert c.start == sentence
    assert c.text.startswith("Tail ends here.\n\nNext")
    assert c.overlap_chars == len("Tail ends here.")


def test_overlap_prefers_the_earliest_sentence_start_in_the_window() -> None:
    first = "Lorem ipsum dolor sit amet consectetur. One. Two. Three ends."
    text = first + "\n\n" + "Q" * 200
    chunks = chunk_and_check(text, 100, 30)
    window_start = len(first) - 30
    c = chunks[1]
    assert c.start >= window_start
    assert text[c.start - 2 : c.start] == ". "
    assert c.text.startswith("One. Two. Three ends.")


def test_overlap_without_sentence_uses_an_early_word_start() -> None:
    first = " ".join(["word"] * 30)  # 149 chars, no sentence end
    text = first + "\n\n" + "Z" * 200
    chunks = chunk_and_check(text, 200, 20)
    c = chunks[1]
    assert text[c.start - 1] == " "  # starts at a word
    assert c.overlap_chars >= 10  # keeps at least half of the window


def test_overlap_without_spaces_starts_at_the_window() -> None:
    text = "漢" * 150
    chunks = chunk_and_check(text, 100, 25)
    assert chunks[1].start == 75 and chunks[1].overlap_chars == 25


def test_overlap_is_counted_inside_max_size() -> None:
    paragraphs = [f"P{i} " + "w " * 45 for i in range(6)]  # each ~94 chars after trimming
    text = "\n\n".join(p.strip() for p in paragraphs)
    chunks = chunk_and_check(text, 100, 30)
    assert all(len(c.text) <= 100 for c in chunks)
    assert sum(c.boundary == BOUNDARY_OVERLAP for c in chunks) >= 5


def test_overlap_zero_is_reported() -> None:
    text = "One sentence here. " * 20
    chunks = chunk_and_check(text, 50, 0)
    assert all(c.boundary == NO_OVERLAP_PREFIX + NO_OVERLAP_DISABLED for c in chunks[1:])


def test_whitespace_gap_too_long_is_reported() -> None:
    text = "abcdefghij" + " " * 20 + "klm"
    chunks = chunk_and_check(text, 10, 3)
    assert [c.text for c in chunks] == ["abcdefghij", "klm"]
    assert chunks[1].boundary == NO_OVERLAP_PREFIX + NO_OVERLAP_WHITESPACE_GAP


def test_single_character_previous_chunk_is_reported() -> None:
    text = "x\n\n" + "y" * 30
    chunks = chunk_and_check(text, 10, 3)
    assert chunks[0].text == "x"
    assert chunks[1].boundary == NO_OVERLAP_PREFIX + NO_OVERLAP_SHORT_PREVIOUS
    assert chunks[2].boundary == BOUNDARY_OVERLAP


def test_large_overlap_still_makes_progress() -> None:
    text = "Alpha beta. Gamma delta. " * 40
    chunks = chunk_and_check(text, 60, 59)
    assert chunks[-1].end == len(text.rstrip())


# --- summary and json --------------------------------------------------------------------------


def test_overlap_summary_counts_every_boundary() -> None:
    text = (
        "# A\n\n" + "Sentence one is here. " * 20 + "\n\n# B\n\nshort\n\n# C\n\n" + "x" * 10 + "\n\n" + " " * 80 + "y"
    )
    chunks = chunk_and_check(text, 60, 10)
    summary = overlap_summary(chunks)
    assert summary["chunks"] == len(chunks)
    assert summary["boundaries"] == len(chunks) - 1
    assert summary["section_starts"] == 2
    assert summary["with_overlap"] + summary["section_starts"] + summary["without_overlap"] == summary["boundaries"]
    assert summary["no_overlap_reasons"] == {NO_OVERLAP_WHITESPACE_GAP: 1}
    overlaps = [c.overlap_chars for c in chunks if c.boundary == BOUNDARY_OVERLAP]
    assert summary["mean_overlap_chars"] == pytest.approx(sum(overlaps) / len(overlaps))
    assert summary["min_overlap_chars"] == min(overlaps)
    assert summary["max_overlap_chars"] == max(overlaps)


def test_overlap_summary_of_nothing() -> None:
    assert overlap_summary([]) == {
        "chunks": 0,
        "boundaries": 0,
        "with_overlap": 0,
        "section_starts": 0,
        "without_overlap": 0,
        "no_overlap_reasons": {},
        "mean_overlap_chars": 0.0,
        "min_overlap_chars": 0,
        "max_overlap_chars": 0,
    }


def test_chunks_to_json_is_plain_and_complete() -> None:
    chunks = chunk_and_check("# A\n## B\nbody text\n")
    [row] = chunks_to_json(chunks)
    assert row == {
        "chunk_index": 0,
        "text": "# A\n## B\nbody text",
        "start": 0,
        "end": 18,
        "title": "B",
        "heading_path": ["A", "B"],
        "heading_path_text": "A > B",
        "overlap_chars": 0,
        "boundary": "first",
        "location": None,
    }
    assert json.loads(json.dumps(chunks_to_json(chunks))) == [row]


# --- performance -------------------------------------------------------------------------------


def _paper(n_sections: int) -> str:
    parts = []
    for s in range(n_sections):
        parts.append(f"## {s}. Section about topic {s}\n")
        for p in range(3):
            parts.append(
                " ".join(f"Sentence {s}.{p}.{k} reports a measured result with some detail." for k in range(5))
                + "\n"
            )
        parts.append("这一节还有中文内容。我们测量了检索的效果，并记录了结果。\n")
        parts.append("```python\n# a comment\nprint('x')\n```\n")
    return "# A Paper\n\n" + "\n".join(parts)


def test_a_23k_char_paper_chunks_fast_and_roughly_linearly() -> None:
    paper = _paper(23)
    assert 20_000 < len(paper) < 30_000
    check_invariants(paper, chunk_text(paper), 800, 100)

    def best_of(text: str, runs: int = 5) -> float:
        times = []
        for _ in range(runs):
            t0 = time.process_time()  # CPU time: other processes on a busy machine do not inflate it
            chunk_text(text)
            times.append(time.process_time() - t0)
        return min(times)

    small = best_of(paper)
    assert small < 0.05, f"{len(paper)} chars took {small * 1000:.1f} ms"
    big = best_of(_paper(184), 3)  # 8x the text
    assert big < small * 8 * 3, f"8x text took {big / small:.1f}x the time"


@pytest.mark.parametrize(
    "text",
    [
        "a" + "." * 50_000 + "x",
        "a" + "\n" * 100_000 + "b",
        "# a" + " " * 50_000 + "b\nbody",
        "# a" + " #" * 25_000 + "\nbody",
        "\n" + " " * 100_000 + "x",
        ("!" + '"' * 50) * 2_000 + "x",
        "1." + " " * 50_000 + "x",
        "```\n" * 30_000,
        "# h\n" * 30_000,
        "# h\nbody\n" * 20_000,
    ],
    ids=["dots", "newlines", "heading-spaces", "heading-hashes", "spaces", "bang-quotes", "list-marker",
         "fences", "heading-only", "many-sections"],
)
def test_pathological_inputs_stay_linear(text: str) -> None:
    # A guard against catastrophic (quadratic) regex backtracking, not a speed claim: on these 50-100k
    # character inputs a quadratic path takes minutes, linear ones ~0.1 s. CPU time of this process, so a
    # busy machine does not fail it.
    t0 = time.process_time()
    chunks = chunk_text(text, 800, 100)
    elapsed = time.process_time() - t0
    check_invariants(text, chunks, 800, 100)
    assert elapsed < 3.0, f"{elapsed:.2f}s of CPU for {len(text)} chars"


def test_heading_titles_drop_only_a_real_closing_sequence() -> None:
    text = "# Title ##\nA\n\n## C#\nB\n\n### F# and C# ###\nC\n\n#### ##\nD\n\n# #hash\nE\n"
    chunks = chunk_and_check(text)
    assert [c.title for c in chunks] == ["Title", "C#", "F# and C#", "#hash"]
    assert "#### ##" in chunks[2].text  # a heading made only of hashes is not a heading


# --- properties --------------------------------------------------------------------------------

_english = st.sampled_from(
    ["The cache warms up.", "Is it down?", "Yes!", "e.g. this one", "v1.2.3 shipped", "word", "x", "3.14"]
)
_chinese = st.sampled_from(["这是一个句子。", "为什么？", "好！", "没有标点的中文", "他说：“好的。”", "检索"])
_long_run = st.integers(1, 300).map(lambda n: "k" * n)
_cjk_run = st.integers(1, 200).map(lambda n: "字" * n)
_space = st.sampled_from([" ", "  ", "\t", "\n", "\n\n", "\n\n\n", " \n \n", "\u3000"])
_heading = st.builds(
    lambda level, words, tail: "#" * level + " " + words + tail,
    st.integers(1, 7),
    st.sampled_from(["Intro", "步骤", "Deep Dive", "C#", "x"]),
    st.sampled_from(["", " ##", "  "]),
)
_fake_heading = st.sampled_from(["#nospace", "    # indented", "#", "# #"])


@st.composite
def _fence(draw: st.DrawFn, unclosed_allowed: bool = False) -> str:
    char = draw(st.sampled_from("`~"))
    n = draw(st.integers(3, 5))
    other = "~" if char == "`" else "`"
    # Fence-like lines that must NOT close this fence: the other character, a shorter run, an info string.
    not_closing = [other * 3, other * n, char * n + "x", *([char * (n - 1)] if n > 3 else [])]
    inner = draw(st.lists(st.sampled_from(["# FENCED comment", "## FENCED", "code()", "", *not_closing]), max_size=5))
    closed = draw(st.booleans()) if unclosed_allowed else True
    return "\n".join([char * n + draw(st.sampled_from(["", "bash", " py"])), *inner] + ([char * n] if closed else []))


_line = st.one_of(
    _heading, _fake_heading, _fence(), st.lists(st.one_of(_english, _chinese), min_size=1, max_size=8).map(" ".join)
)
_piece = st.one_of(_english, _chinese, _long_run, _cjk_run, _space, _line.map(lambda s: "\n" + s + "\n"))
# An unclosed fence runs to the end of the document, so it may only come last.
documents = st.builds(
    lambda pieces, tail: "".join(pieces) + tail,
    st.lists(_piece, max_size=40),
    st.one_of(st.just(""), _fence(unclosed_allowed=True).map(lambda s: "\n" + s)),
)


@st.composite
def sizes(draw: st.DrawFn) -> tuple[int, int]:
    max_size = draw(st.one_of(st.integers(1, 40), st.integers(41, 400)))
    overlap = draw(st.one_of(st.just(0), st.integers(0, max_size - 1)))
    return max_size, overlap


_settings = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow  # a property test (Hypothesis)
@_settings
@given(documents, sizes())
def test_property_invariants(text: str, params: tuple[int, int]) -> None:
    max_size, overlap = params
    chunks = chunk_text(text, max_size, overlap)
    check_invariants(text, chunks, max_size, overlap)
    assert not any("FENCED" in part for c in chunks for part in c.heading_path)
    assert chunk_text(text, max_size, overlap) == chunks  # deterministic
    summary = overlap_summary(chunks)
    assert summary["with_overlap"] + summary["section_starts"] + summary["without_overlap"] == summary["boundaries"]


@pytest.mark.slow  # a property test (Hypothesis)
@_settings
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=400), sizes())
def test_property_invariants_on_arbitrary_text(text: str, params: tuple[int, int]) -> None:
    max_size, overlap = params
    check_invariants(text, chunk_text(text, max_size, overlap), max_size, overlap)


@pytest.mark.slow  # a property test (Hypothesis)
@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["这是一个句子。", "第二句话更长一些，对吧？", "好！"]), min_size=5, max_size=60)
       .map("".join),
       st.integers(20, 120))
def test_property_chinese_overlap_is_never_empty(text: str, max_size: int) -> None:
    overlap = max_size // 4 + 1
    chunks = chunk_text(text, max_size, overlap)
    check_invariants(text, chunks, max_size, overlap)
    for c in chunks[1:]:
        assert c.boundary == BOUNDARY_OVERLAP and c.overlap_chars > 0


def test_ordered_list_markers_are_not_sentence_ends() -> None:
    text = "Steps to follow now:\n" + "\n".join(f"{i}. Do thing number {i} carefully" for i in range(1, 12))
    chunks = chunk_and_check(text, 90, 40)
    for c in chunks:
        assert not c.text.rstrip().split("\n")[-1].rstrip(".").isdigit()  # never ends on a bare "4."
    for c in chunks[1:]:
        assert text[c.start - 1] == "\n"  # overlap starts at a list item, not after its marker
