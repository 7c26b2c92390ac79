"""A PDF slide deck (Beamer-like: 128 x 96 mm landscape pages, a title and bullets) reads as a .pptx does: each page
a slide, its own chunk, cited "slide N", headed by its title; a block's one-cell box is no table (issue 39)."""

from __future__ import annotations

from rag_core.loaders import load_bytes
from rag_core.loaders.pdf_slides import is_deck
from rag_core.records import PAGE, SLIDE
from tests.loaders.checks import chunks_of
from tests.loaders.pdf_samples import BLOCK_TITLE, BOXED_SLIDE, SLIDES, deck_pdf, text_pdf_sized


def test_each_page_of_a_deck_is_a_slide_headed_by_its_title() -> None:
    doc = load_bytes(deck_pdf(), "talk.pdf")
    assert [(p.unit, p.number) for p in doc.places] == [(SLIDE, n) for n in range(1, len(SLIDES) + 1)]
    chunks = chunks_of(doc, 800, 100)
    assert [c.location.label if c.location else "" for c in chunks] == [f"slide {n}" for n in range(1, len(SLIDES) + 1)]
    assert [c.heading_path for c in chunks] == [(title,) for title, _ in SLIDES]
    for chunk, (title, bullets) in zip(chunks, SLIDES):
        assert chunk.text.startswith(f"# {title}\n")  # the title first, above the navigation line
        flat = " ".join(chunk.text.split())
        where = [flat.index(b) for b in bullets]
        assert where == sorted(where)
    assert "|" not in doc.text  # slide 4's block (a ruled title bar over a ruled body) is no table
    boxed = chunks[BOXED_SLIDE - 1].text
    assert boxed.index(BLOCK_TITLE) < boxed.index(SLIDES[BOXED_SLIDE - 1][1][0])


def test_a_slide_without_a_larger_title_is_headed_by_its_number() -> None:
    slides = list(SLIDES[:3])
    slides[1] = ("", ["A slide of bullets only", "Nothing is set larger than the rest", "So it has no title"])
    doc = load_bytes(deck_pdf(slides), "talk.pdf")
    chunks = chunks_of(doc, 800, 100)
    assert [c.heading_path for c in chunks] == [("Draining Zones",), ("Slide 2",), ("The controller",)]
    assert "A slide of bullets only" in chunks[1].text


def test_a_16_9_deck_is_a_deck_and_papers_are_not() -> None:
    doc = load_bytes(deck_pdf(size=(960, 540)), "exported.pdf")  # PowerPoint's 13.33 x 7.5 in
    assert {p.unit for p in doc.places} == {SLIDE}
    for size in ((842, 595), (792, 612), (595, 842)):  # landscape A4 and Letter, portrait A4
        doc = load_bytes(text_pdf_sized(["Title\nA line of text."] * 3, size), "report.pdf")
        assert {p.unit for p in doc.places} == {PAGE}, size
    assert not is_deck([(362.8, 272.1)], ["One slide"])  # one page alone is not a deck
    lines = "\n".join(f"line {n}" for n in range(40))
    assert not is_deck([(720, 540)] * 3, [lines] * 3)  # 4:3 pages full of lines: a landscape document
    assert is_deck([(720, 540)] * 4 + [(595, 842)], ["A slide"] * 5)  # 80% are slides
