"""The pure HTML builders: exact text, every overlap highlighted, boundaries marked, nothing executable."""

import html
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_core.chunking import chunk_text, overlap_summary
from rag_core.records import Chunk
from ui.html import ChunkView, chunk_card_html, document_html, overlap_summary_lines

DOC = ("# Title\n\nFirst sentence is here. Second sentence follows it. Third one closes the paragraph.\n\n"
       "Another paragraph starts. It keeps going for a while. And then it ends.\n")


def visible_text(fragment: str) -> str:
    """The text a browser shows: tags (and the badge numbers inside them) removed, entities decoded."""
    without_badges = re.sub(r'<span class="chunk-start"[^>]*>\d+</span>', "", fragment)
    without_note = re.sub(r'<div class="truncated"[^>]*>.*?</div>', "", without_badges, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", without_note))


def test_document_html_keeps_the_exact_text_and_highlights_each_overlap():
    chunks = chunk_text(DOC, 60, 30)
    overlapped = [c for c in chunks if c.overlap_chars]
    assert overlapped, "the fixture must produce overlap"
    out = document_html(DOC, chunks)
    assert visible_text(out) == DOC
    marks = re.findall(r'<mark class="overlap"[^>]*>(.*?)</mark>', out, flags=re.S)
    assert [html.unescape(m) for m in marks] == [c.text[: c.overlap_chars] for c in overlapped]
    # one start badge and one end bar per chunk
    assert out.count('class="chunk-start"') == len(chunks)
    assert out.count('class="chunk-end"') == len(chunks)


def test_no_overlap_means_no_highlight_and_alternating_backgrounds():
    chunks = chunk_text(DOC, 60, 0)
    out = document_html(DOC, chunks)
    assert 'class="overlap"' not in out
    assert "#e3effd" in out and "#e6f4e3" in out


def test_document_html_escapes_markup_so_scripts_never_run():
    evil = ('# Hi <b>there</b>\n\n<script>alert("x")</script> and <img src=x onerror="alert(1)"> '
            "more text to make a second chunk. " * 3)
    chunks = chunk_text(evil, 80, 20)
    out = document_html(evil, chunks)
    assert "<script" not in out and "<img" not in out and "<b>" not in out
    assert "&lt;script&gt;" in out and "onerror=&quot;alert(1)&quot;" in out
    assert visible_text(out) == evil
    card = chunk_card_html(ChunkView.of(chunks[1], doc_id='<script>x</script>.md'))
    assert "<script" not in card and "&lt;script&gt;x&lt;/script&gt;.md" in card


def test_max_chars_renders_only_the_beginning_and_says_so():
    text = "Sentence number one. " * 200
    chunks = chunk_text(text, 100, 20)
    out = document_html(text, chunks, max_chars=500)
    assert "showing the first 500 of 4,200 characters" in out
    assert visible_text(out) == text[:500]


def test_chunk_card_shows_facts_and_highlights_its_overlap_prefix():
    chunk = Chunk(3, "overlap part. new part", 120, 142, "Commands", ("Runbook", "Commands"), 14, "overlap")
    card = chunk_card_html(ChunkView.of(chunk, "runbooks/x.md"))
    for fact in ("runbooks/x.md #3", "Runbook &gt; Commands", "[120:142]", "22 chars", "overlap 14"):
        assert fact in card
    assert re.search(r'<mark class="overlap"[^>]*>overlap part. </mark>new part', card)


def test_overlap_summary_lines_explain_boundaries_without_overlap():
    chunks = chunk_text(DOC, 60, 30)
    lines = overlap_summary_lines(overlap_summary(chunks))
    summary = overlap_summary(chunks)
    assert lines[0].startswith(f"**{summary['with_overlap']} of {summary['boundaries']}**")
    assert any("new heading section" in line for line in lines) == bool(summary["section_starts"])
    assert overlap_summary_lines(overlap_summary(chunk_text("one", 60, 0))) == [
        "One chunk: there is no boundary to overlap."]


@pytest.mark.slow  # a property test (Hypothesis)
@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab .。\n#<>&\"'中")), max_size=400),
       size=st.integers(10, 80), overlap_share=st.floats(0, 0.9))
def test_document_html_shows_any_text_exactly(text, size, overlap_share):
    overlap = min(size - 1, int(size * overlap_share))
    chunks = chunk_text(text, size, overlap)
    out = document_html(text, chunks)
    assert visible_text(out) == text
    assert "<script" not in out


def test_compare_views_escape_document_text():
    from rag_core.chunk_compare import compare_chunkings
    from rag_core.retrieval.compare import compare_evidence
    from ui.html import aligned_chunkings_html, compared_evidence_html

    evil = "# T\n\n<script>alert(1)</script> <img src=x onerror=alert(2)> " * 8
    out = aligned_chunkings_html(evil, compare_chunkings(evil, chunk_text(evil, 120, 20), chunk_text(evil, 80, 10)))
    assert "<script>" not in out and "<img" not in out and "&lt;script&gt;" in out
    rows = re.findall(r'<td style="white-space:pre-wrap[^>]*>(?:<span style="float:right.*?</span></span>)?(.*?)</td>',
                      out, flags=re.S)
    assert html.unescape("".join(rows)) == evil  # the rows hold the whole text, in order, once
    from rag_core.records import Candidate

    block = Candidate(1, None, "<b>d</b>", 0, "<b>d</b>#chunk-0", 1.0, evil, "s", {}, ("dense",))
    side = compare_evidence([block], []).a
    out = compared_evidence_html(side)
    assert "<script>" not in out and "<b>d</b>" not in out and 'data-mark="only A"' in out
