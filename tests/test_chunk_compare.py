"""The chunk preview's compare mode: two chunkings of one text aligned by character offset, every boundary
marked as made by both or by one of them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_core.chunk_compare import BOTH, ONLY_A, ONLY_B, compare_chunkings
from rag_core.chunking import chunk_text
from rag_core.records import Chunk
from tests.helpers import SAMPLE_KB

DISK = (SAMPLE_KB / "runbooks" / "disk_full.md").read_text(encoding="utf-8")


def chunk(text: str, index: int, start: int, end: int) -> Chunk:
    return Chunk(index, text[start:end], start, end, "", (), 0)


def test_constructed_chunkings_rows_and_marks() -> None:
    text = "0123456789abcdefghij"
    a = [chunk(text, 0, 0, 10), chunk(text, 1, 8, 20)]  # overlap 8..10
    b = [chunk(text, 0, 0, 12), chunk(text, 1, 12, 20)]
    c = compare_chunkings(text, a, b)
    assert [(x.offset, x.mark) for x in c.boundaries] == [(0, BOTH), (8, ONLY_A), (10, ONLY_A), (12, ONLY_B),
                                                          (20, BOTH)]
    assert (c.boundaries[3].b_ends, c.boundaries[3].b_starts) == ((0,), (1,))
    assert [(r.start, r.end, r.a_chunks, r.b_chunks) for r in c.rows] == [
        (0, 8, (0,), (0,)), (8, 10, (0, 1), (0,)), (10, 12, (1,), (0,)), (12, 20, (1,), (1,))]
    assert c.counts() == {BOTH: 0, ONLY_A: 2, ONLY_B: 1}  # the text's edges are not counted
    assert c.to_dict()["counts"] == c.counts() and c.to_dict()["chunks"] == {"a": 2, "b": 2}


def test_a_gap_and_a_text_start_without_a_chunk() -> None:
    text = "  abc\n\ndef"
    a = [chunk(text, 0, 2, 5), chunk(text, 1, 7, 10)]
    c = compare_chunkings(text, a, a)
    assert [(r.start, r.end, r.a_chunks, r.boundary is None) for r in c.rows] == [
        (0, 2, (), True), (2, 5, (0,), False), (5, 7, (), False), (7, 10, (1,), False)]
    assert {x.mark for x in c.boundaries} == {BOTH}


def test_same_configuration_cuts_in_the_same_places() -> None:
    chunks = chunk_text(DISK, 800, 100)
    c = compare_chunkings(DISK, chunks, chunks)
    assert c.counts()[ONLY_A] == c.counts()[ONLY_B] == 0 and c.counts()[BOTH] > 0
    assert all(r.a_chunks == r.b_chunks for r in c.rows)


def _check(text: str, a: list[Chunk], b: list[Chunk]) -> None:
    c = compare_chunkings(text, a, b)
    assert c.rows[0].start == 0 and c.rows[-1].end == len(text)
    assert all(r.end == n.start and r.start < r.end for r, n in zip(c.rows, c.rows[1:]))  # rows tile the text
    for side, chunks in (("a", a), ("b", b)):
        for ch in chunks:  # a chunk is exactly the rows that say they are in it
            rows = [r for r in c.rows if ch.chunk_index in getattr(r, f"{side}_chunks")]
            assert "".join(text[r.start:r.end] for r in rows) == ch.text
            assert any(x.offset == ch.start and ch.chunk_index in getattr(x, f"{side}_starts") for x in c.boundaries)
    for x in c.boundaries:
        in_a = any(ch.start == x.offset or ch.end == x.offset for ch in a)
        in_b = any(ch.start == x.offset or ch.end == x.offset for ch in b)
        assert x.mark == (BOTH if in_a and in_b else ONLY_A if in_a else ONLY_B)


def test_two_configurations_of_a_real_document() -> None:
    _check(DISK, chunk_text(DISK, 800, 100), chunk_text(DISK, 300, 30))
    c = compare_chunkings(DISK, chunk_text(DISK, 800, 100), chunk_text(DISK, 300, 30))
    assert c.counts()[ONLY_B] > c.counts()[ONLY_A] > 0 and c.counts()[BOTH] > 0  # section starts are shared


@pytest.mark.slow  # a property test (Hypothesis)
@settings(max_examples=40, deadline=None)
@given(st.text(alphabet="ab .。\n#", min_size=1, max_size=600), st.integers(20, 200), st.integers(20, 200))
def test_alignment_holds_for_any_text_and_sizes(text: str, size_a: int, size_b: int) -> None:
    _check(text, chunk_text(text, size_a, size_a // 4), chunk_text(text, size_b, size_b // 3))
