"""Properties of parent sections (rag_core/parents.py) and of the block text the expansion stage stitches and grows
(rag_core/retrieval/expand.py), over real `chunk_text` output (Hypothesis)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_core.chunking import chunk_text
from rag_core.parents import ChunkSpan, parent_range
from rag_core.records import Chunk, StoredChunk
from rag_core.retrieval.expand import Rows, grow, stitch
from rag_core.tokens import count_tokens

_settings = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_PATHS = ((), ("A",), ("A", "a1"), ("A", "a1", "x"), ("A", "a2"), ("B",), ("B", "b1"))


@st.composite
def documents_spans(draw: st.DrawFn) -> list[ChunkSpan]:
    """A document's chunks in order: sizes, gaps or overlaps between them, heading paths, pages; some without
    offsets (added chunks)."""
    spans: list[ChunkSpan] = []
    pos, page = 0, 1
    for index in range(draw(st.integers(1, 25))):
        pos = max(0, pos + draw(st.integers(-30, 5)))
        size = draw(st.one_of(st.integers(1, 200), st.integers(200, 2000)))
        page += draw(st.sampled_from([0, 0, 1]))
        path = draw(st.sampled_from(_PATHS))
        if draw(st.integers(0, 9)) == 0:
            spans.append(ChunkSpan(index, None, None, path, None))
            continue
        spans.append(ChunkSpan(index, pos, pos + size, path, page))
        pos += size
    return spans


@pytest.mark.slow  # a property test (Hypothesis)
@_settings
@given(documents_spans(), st.integers(1, 3000), st.data())
def test_a_parent_holds_its_chunk_within_its_section_and_the_limit(spans: list[ChunkSpan], max_size: int,
                                                                   data: st.DataObject) -> None:
    at = data.draw(st.integers(0, len(spans) - 1))
    first, last = parent_range(spans, at, max_size)
    assert first <= at <= last and 0 <= first and last < len(spans)  # holds its chunk; a range: contiguous
    assert parent_range(spans, at, max_size) == (first, last)  # deterministic
    me = spans[at]
    if not me.located:
        assert (first, last) == (at, at)  # a chunk without offsets is its own parent
        return
    held = spans[first:last + 1]
    assert all(s.located for s in held)  # never across an added chunk
    assert first == last or held[-1].end - held[0].start <= max_size  # type: ignore[operator]
    assert all(s.path[:len(me.path)] == me.path for s in held)  # within its heading section


@pytest.mark.slow
@_settings
@given(documents_spans(), st.integers(1, 3000))
def test_the_parents_of_a_section_s_chunks_do_not_cross(spans: list[ChunkSpan], max_size: int) -> None:
    """Chunks of one parent share it: any two parents are the same or apart (windows tile their part)."""
    by_path: dict[tuple[str, ...], set[tuple[int, int]]] = {}
    for at in range(len(spans)):
        if spans[at].located:
            by_path.setdefault(spans[at].path, set()).add(parent_range(spans, at, max_size))
    for same in by_path.values():
        ordered = sorted(same)
        assert all(a[1] < b[0] for a, b in zip(ordered, ordered[1:]))



def test_a_section_longer_than_the_limit_splits_at_sub_headings_then_windows() -> None:
    spans = [ChunkSpan(0, 0, 100, ("A",)), ChunkSpan(1, 100, 200, ("A", "a1")), ChunkSpan(2, 200, 300, ("A", "a1")),
             ChunkSpan(3, 300, 400, ("A", "a2")), ChunkSpan(4, 400, 500, ("A", "a2")),
             ChunkSpan(5, 500, 600, ("A", "a2")), ChunkSpan(6, 600, 1600, ("A", "a2"))]
    assert parent_range(spans, 0, 10_000) == (0, 6)  # A's whole section fits
    assert parent_range(spans, 1, 10_000) == (1, 2)  # the innermost section: a1
    assert parent_range(spans, 0, 250) == (0, 0)  # A is too long: its own text (without its sub-sections)
    assert [parent_range(spans, at, 250) for at in (3, 4, 5)] == [(3, 4), (3, 4), (5, 5)]  # windows of whole chunks
    assert parent_range(spans, 6, 250) == (6, 6)  # a chunk longer than the limit is its own parent
    assert parent_range([*spans[:3], ChunkSpan(7, None, None, ("A", "a1"))], 3, 250) == (3, 3)


# --- stitch and grow over real chunks ---------------------------------------------------------

_words = st.sampled_from(["The cache warms up.", "Is it down?", "word", "这是一个句子。", "检索", "x", "3.14"])
_space = st.sampled_from([" ", "\n", "\n\n", "  ", "\n\n\n", "\t"])
_heading = st.sampled_from(["# Intro", "## Deep Dive", "### 步骤"]).map(lambda h: "\n" + h + "\n")
texts = st.lists(st.one_of(_words, _space, _heading), min_size=1, max_size=60).map("".join)
_HEADING_LINE = re.compile(r" {0,3}#{1,6}[^\S\n]")


def stored(doc_id: str, chunks: list[Chunk], version: str = "v1") -> list[StoredChunk]:
    return [StoredChunk(id=f"{doc_id}:{c.chunk_index}", doc_id=doc_id, chunk_index=c.chunk_index, content=c.text,
                        source=doc_id, title=c.title, version=version,
                        metadata={"docId": doc_id, "chunkIndex": c.chunk_index, "start": c.start, "end": c.end,
                                  "headingPath": " > ".join(c.heading_path), "version": version})
            for c in chunks]


def _exact_gap(gap: str, after: str) -> bool:
    """Whether stitch gives this gap between two chunks as it is in the document."""
    return gap in ("", " ", "\n\n") or (gap == "\n" and _HEADING_LINE.match(after) is not None)


@pytest.mark.slow
@_settings
@given(texts, st.integers(10, 300), st.integers(0, 60), st.data())
def test_stitching_unedited_chunks_gives_the_document_s_text(text: str, max_size: int, overlap: int,
                                                              data: st.DataObject) -> None:
    chunks = chunk_text(text, max_size, min(overlap, max_size - 1))
    if not chunks:
        return
    i = data.draw(st.integers(0, len(chunks) - 1))
    j = data.draw(st.integers(i, len(chunks) - 1))
    run = chunks[i:j + 1]
    matched = {c.chunk_index for c in run if data.draw(st.booleans())}
    content, marks, start, end = stitch(stored("d.md", run), matched)
    truth = text[run[0].start:run[-1].end]
    assert (start, end) == (run[0].start, run[-1].end)
    assert content.split() == truth.split()  # the same words in the same order, always
    gaps = [(text[a.end:b.start], b.text) for a, b in zip(run, run[1:]) if b.start > a.end]
    if all(_exact_gap(gap, after) for gap, after in gaps):
        assert content == truth  # overlaps given once, gaps as they are: exactly the document's text
    assert [content[a:b] for a, b in marks] == [c.text for c in run if c.chunk_index in matched]


@st.composite
def rows_with_gaps(draw: st.DrawFn) -> tuple[Rows, str]:
    """A document's rows as a lookup reads them: real chunks, some disabled (left out), some added at the end."""
    text = draw(texts.filter(str.strip))
    chunks = stored("d.md", chunk_text(text, draw(st.integers(10, 120)), draw(st.integers(0, 9))))
    kept = [c for c in chunks if len(chunks) == 1 or draw(st.integers(0, 5))]  # left out: disabled
    if not kept:
        kept = chunks[:1]
    added = [StoredChunk(id=f"d.md:{len(chunks) + n}", doc_id="d.md", chunk_index=len(chunks) + n,
                         content=f"An added chunk {n}.", source="d.md", title="", version="v1",
                         metadata={"docId": "d.md", "chunkIndex": len(chunks) + n, "added": True, "edited": True})
             for n in range(draw(st.integers(0, 2)))]
    return Rows([*kept, *added]), text


@pytest.mark.slow
@_settings
@given(rows_with_gaps(), st.integers(1, 120), st.data())
def test_grow_stays_within_its_limits_budget_and_the_document_s_gaps(made: tuple[Rows, str], budget: int,
                                                                     data: st.DataObject) -> None:
    rows, _ = made
    n = len(rows.chunks)
    pos = data.draw(st.integers(0, n - 1))
    first = data.draw(st.integers(0, pos))
    last = data.draw(st.integers(pos, n - 1))
    lo, hi, stopped = grow(rows, pos, (first, last), budget)
    assert first <= lo <= pos <= hi <= last
    held = rows.chunks[lo:hi + 1]
    assert [c.chunk_index for c in held] == list(range(held[0].chunk_index, held[-1].chunk_index + 1))  # no gap
    assert lo == hi or not any(c.metadata.get("added") for c in held)  # an added chunk is never grown into
    content = stitch(held, ())[0]
    assert lo == hi or count_tokens(content) <= budget  # never over the budget but for the hit's own chunk
    assert grow(rows, pos, (first, last), budget) == (lo, hi, stopped)
    if stopped == "":
        assert (lo, hi) == (first, last)
    if (lo, hi) != (first, last) and stopped != "block_tokens":
        assert stopped in ("disabled", "added")
