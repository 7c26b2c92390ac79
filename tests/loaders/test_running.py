"""Running headers and footers (rag_core/loaders/running.py): PDFs made with reportlab (a Chinese manual with its
title on every page and page numbers in several styles, an English policy with "Untitled N" and "Page N of M") lose
those lines from every chunk, keep citing the right pages, and say in their notes what was removed; a PDF without
running lines, a two-page PDF, a heading on 2 pages of 12, templated body lines and a page that is only its title
stay as they were; a deck's conference name goes from every slide."""

from __future__ import annotations

import pytest

from rag_core.chunking import chunk_document
from rag_core.loaders import LoadOptions, load_bytes
from rag_core.loaders.extracted import Extracted
from rag_core.loaders.limits import TextBudget
from rag_core.loaders.pdf import pdf_text
from rag_core.loaders.running import drop_running
from rag_core.phrases import english
from rag_core.records import PAGE, ROW, Document, Place
from tests.loaders.running_samples import (
    CHAPTER,
    CONFERENCE,
    FOOTERS,
    MANUAL_TITLE,
    conference_deck,
    en_marker,
    manual_pdf,
    policy_pdf,
    running_lines,
    zh_marker,
)


def page_of(doc: Document, offset: int) -> int:
    """The number of the page the text at `offset` is on, by the document's places."""
    return [p.number for p in doc.places if p.offset <= offset][-1]


def left_in(doc: Document, lines: set[str], after: int = 0, size: int = 400) -> list[str]:
    """The running lines the document's chunks still hold (from offset `after` on), one per line of a chunk that
    is one."""
    return [line.strip() for c in chunk_document(doc, size, 60) for line in doc.text[max(c.start, after):c.end]
            .split("\n") if line.strip() in lines]


@pytest.mark.parametrize("footer", sorted(FOOTERS))
def test_the_manuals_title_and_page_numbers_leave_every_chunk(footer):
    doc = load_bytes(manual_pdf(12, footer), "manual.pdf")
    assert left_in(doc, running_lines(footer, 12), after=doc.places[1].offset) == []  # page 1 is only the title
    assert doc.text.count(MANUAL_TITLE) == 1 and chunk_document(doc, 400, 60)[0].text.startswith(MANUAL_TITLE)
    for page in range(2, 13):  # a sentence on page 3 is cited p. 3
        at = doc.text.index(zh_marker(page))
        assert page_of(doc, at) == page
        (chunk,) = [c for c in chunk_document(doc, 400, 60)
                    if c.start + c.overlap_chars <= at < c.end]  # the chunk it is in, not repeated as overlap
        assert chunk.location is not None and chunk.location.first <= page <= chunk.location.last
    (note,) = doc.note_phrases
    assert note.code == "load.running_lines_pages" and note.params["pages"] == 11 and note.params["total"] == 12
    shown = {"bare": "N", "dashes": "- N -", "page of": "Page N of 12", "chinese": "第 N 页", "slash": "N / 12"}
    assert note.params["lines"] == [f"“{MANUAL_TITLE}”", f"“{shown[footer]}”"]
    assert doc.notes == (english(note),) and MANUAL_TITLE in doc.notes[0]


def test_the_title_page_and_a_heading_on_two_pages_stay():
    doc = load_bytes(manual_pdf(12), "manual.pdf")
    assert [p.number for p in doc.places] == list(range(1, 13))  # the title page is only the title: kept whole
    assert doc.text.startswith(MANUAL_TITLE + "\n\n")
    assert doc.text.count(CHAPTER) == 2  # pages 2 and 5: a real heading, not a running line
    assert [page_of(doc, i) for i in (doc.text.index(CHAPTER), doc.text.rindex(CHAPTER))] == [2, 5]


def test_the_policys_header_and_footers_drawn_after_the_body_go():
    doc = load_bytes(policy_pdf(10), "policy.pdf")
    assert left_in(doc, running_lines("policy", 10)) == []
    assert "Untitled" not in doc.text and "Confidential" not in doc.text
    assert all(page_of(doc, doc.text.index(en_marker(p))) == p for p in range(1, 11))
    chunks = chunk_document(doc, 400, 60)
    third = next(c for c in chunks if en_marker(3) in c.text)
    assert third.location is not None and 3 in (third.location.first, third.location.last)
    (note,) = doc.note_phrases
    assert set(note.params["lines"]) == {"“Untitled N”", "“Company Confidential”", "“Page N of 10”"}
    assert note.params["pages"] == note.params["total"] == 10


def test_a_pdf_without_running_lines_is_unchanged():
    data = manual_pdf(12, running=False)
    extracted = pdf_text(data, "plain.pdf", "pdf", TextBudget("plain.pdf", 10**7), LoadOptions())
    assert drop_running(extracted) is extracted
    doc = load_bytes(data, "plain.pdf")
    assert doc.text == extracted.text and doc.places == extracted.places and doc.notes == ()
    policy = load_bytes(policy_pdf(10, running=False), "plain.pdf")
    assert policy.notes == () and all(en_marker(p) in policy.text for p in range(1, 11))


def test_two_pages_are_too_few_to_tell():
    doc = load_bytes(policy_pdf(2), "short.pdf")
    assert doc.notes == () and doc.text.count("Company Confidential") == 2


def test_a_conference_name_on_every_slide_goes_and_the_titles_stay():
    doc = load_bytes(conference_deck(5), "talk.pptx")
    assert CONFERENCE not in doc.text
    assert doc.text.count("# Topic") == 5 and [p.number for p in doc.places] == [1, 2, 3, 4, 5]
    assert all(doc.text[p.offset:].startswith(f"# Topic {p.number}:") for p in doc.places)
    (note,) = doc.note_phrases
    assert note.code == "load.running_lines_slides" and note.params["lines"] == [f"“{CONFERENCE}”"]


# --- the rule, on text --------------------------------------------------------------------------------

def pages(*texts: str, unit: str = PAGE) -> Extracted:
    places, offset = [], 0
    for n, text in enumerate(texts, start=1):
        places.append(Place(offset, unit, n))
        offset += len(text) + 2
    return Extracted("\n\n".join(texts), "pdf", tuple(places))


def body(n: int, lines: int = 8) -> str:
    words = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo")
    return "\n".join(f"{words[(n + i) % 11]} {words[(n * 3 + i) % 11]} {words[(n * 5 + i) % 7]} line" for i in
                     range(lines))


def test_only_the_edges_and_only_most_pages():
    texts = [f"Handbook\n{body(n)}\n{'Handbook' + chr(10) if n == 0 else ''}{body(n + 20)}\n- {n + 1} -"
             for n in range(6)]
    out = drop_running(pages(*texts))
    assert out.text.count("Handbook") == 1  # the one in the middle of page 1 stays
    assert "- 1 -" not in out.text and "- 6 -" not in out.text
    assert [out.text[p.offset:].split("\n", 1)[0] for p in out.places] == [body(n).split("\n")[0] for n in range(6)]
    half = [f"Draft\n{body(n)}" if n < 3 else body(n) for n in range(6)]  # 3 of 6 pages: a clear half
    assert "Draft" not in drop_running(pages(*half)).text
    fewer = [f"Draft\n{body(n)}" if n < 2 else body(n) for n in range(6)]
    assert drop_running(pages(*fewer)).text.count("Draft") == 2


def test_templated_body_lines_and_pages_of_running_lines_only_stay():
    texts = [f"Step {n}: check the logs\n" + "\n".join(f"Step {n * 10 + i}: check the logs" for i in range(9))
             for n in range(5)]
    assert drop_running(pages(*texts)).text == "\n\n".join(texts)  # also in the middle of the pages: body text
    texts = ["Manual\n3", f"Manual\n{body(1)}\n4", f"Manual\n{body(2)}\n5", f"Manual\n{body(3)}\n6"]
    out = drop_running(pages(*texts))
    assert out.text.startswith("Manual\n3\n\n" + body(1).split("\n")[0]) and "\n4" not in out.text
    assert len(out.places) == 4


def test_a_passage_repeated_at_the_edge_of_pages_is_body_text():
    """Pages that repeat a passage longer than their edges (build-up slides, a sample page printed again) keep it: a
    running line is followed by each page's own text, a line of the passage by the passage's next line."""
    passage = "\n".join(f"The gateway drains zone {z} first, then restarts its workers" for z in "abcd")
    texts = [f"{passage}\n{body(n)}" for n in range(6)]
    assert drop_running(pages(*texts)).text == "\n\n".join(texts)


def test_roman_page_numbers_headings_and_rows():
    texts = [f"{roman}\n{body(n)}" for n, roman in enumerate(("i", "ii", "iii", "iv", "v", "vi"))]
    assert drop_running(pages(*texts)).text == "\n\n".join(body(n) for n in range(6))
    headed = [f"# Overview\n{body(n)}" for n in range(6)]
    assert drop_running(pages(*headed)).text == "\n\n".join(headed)  # a heading is never a running line
    rows = pages(*[f"Sheet header\n{body(n, 2)}" for n in range(6)], unit=ROW)
    assert drop_running(rows) is rows


def test_the_lines_left_out_are_the_documents_metadata(tmp_path, local_embedder, milvus):
    """Kept as its `running_lines` labels (Document.fields, written with its front matter): the metadata view and
    `tag DOC` show them, and a filter can use them."""
    from tests.helpers import make_workbench

    doc = load_bytes(policy_pdf(10), "policy.pdf")
    assert set(doc.fields["running_lines"]) == {"Untitled N", "Company Confidential", "Page N of 10"}
    assert not load_bytes(manual_pdf(2), "short.pdf").fields
    wb = make_workbench(tmp_path, local_embedder)
    try:
        wb.ingestor.ingest_uploads([("policy.pdf", policy_pdf(10))])
        labels = wb.store.labels.all()["policy.pdf"]
        assert set(labels["running_lines"]) == {"Untitled N", "Company Confidential", "Page N of 10"}
    finally:
        wb.close()
