"""PDF pages and tables: every chunk knows its pages, a table across a page break keeps its header row, pages
without a text layer are found (their OCR is in test_ocr.py)."""

from __future__ import annotations

import sys

import pytest

from rag_core.errors import LoaderError
from rag_core.loaders import load_bytes
from rag_core.records import PAGE
from tests.loaders.checks import chunks_of
from tests.loaders.samples import TABLE_ROWS, mixed_pdf, outlined_pdf, render_page, scanned_pdf, table_pdf, text_pdf

HEADER = "| Alert | Threshold | Severity | Runbook |\n|---|---|---|---|"


def test_page_numbers_reach_every_chunk() -> None:
    pages = ["\n".join(f"Page {n} line {i}: the payment gateway restarts its workers." for i in range(30))
             for n in (1, 2, 3)]
    doc = load_bytes(text_pdf(pages), "manual.pdf")
    assert [(p.unit, p.number) for p in doc.places] == [(PAGE, 1), (PAGE, 2), (PAGE, 3)]
    assert doc.text[doc.places[1].offset:].startswith("Page 2 line 0:")
    chunks = chunks_of(doc, 800, 100)
    labels = [c.location.label for c in chunks]
    assert labels[0] == "p. 1" and labels[-1] == "p. 3"
    assert "pp. 1–2" in labels and "pp. 2–3" in labels  # chunks across a page break know both pages
    spanning = next(c for c in chunks if c.location.label == "pp. 1–2")
    assert "Page 1 line 29" in spanning.text and "Page 2 line 0" in spanning.text


def test_table_across_a_page_break_keeps_its_header() -> None:
    doc = load_bytes(table_pdf(), "catalogue.pdf")
    assert [p.number for p in doc.places] == [1, 2]
    rows = [line for line in doc.text.splitlines() if line.startswith("| Alert0")]
    assert len(rows) == TABLE_ROWS and rows[0] == "| Alert000 | 50% | warning | runbooks/alert000.md |"
    page_two = doc.text[doc.places[1].offset:]
    assert page_two.startswith(HEADER)  # the rows that ran on to page 2 are under the header of page 1
    assert doc.text.count("| Alert | Threshold |") == doc.text.count(HEADER) > 2  # one header per block, no other
    assert doc.text.startswith("Alert thresholds\nEvery production alert with its threshold")
    assert doc.text.endswith("The end of the catalogue.")
    for chunk in chunks_of(doc, 800, 100):
        if "| Alert0" in chunk.text:
            assert HEADER in chunk.text, chunk


def test_blank_and_scanned_pages_without_the_ocr_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)  # as if the extra were not installed
    page = render_page(size=(600, 300), font_px=24)
    with pytest.raises(LoaderError) as info:
        load_bytes(scanned_pdf([page, page]), "scan.pdf")
    assert info.value.code == "needs_ocr" and 'pip install ".[ocr]"' in str(info.value)
    assert "no text layer on its 2 pages" in str(info.value)
    doc = load_bytes(mixed_pdf("A page with a text layer.", page), "mixed.pdf")
    assert doc.text == "A page with a text layer." and [p.number for p in doc.places] == [1]
    assert doc.notes == ('page 2 has no text layer and was not read: OCR needs the optional extra '
                         '(pip install ".[ocr]")',)


def test_an_outline_makes_headings_and_sections() -> None:
    extra = ((1, 3, "Restarting the workers"),  # its line is already the heading before: no later line matches
             (2, 1, "Not a line of this page"),
             (3, 2, "DELETE old log files under /var/log and rotate them with logrotate."))  # case differs
    doc = load_bytes(outlined_pdf(outline=extra), "manual.pdf")
    headings = [line for line in doc.text.splitlines() if line.startswith("#")]
    assert headings == ["# Payment gateway", "## Restarting the workers", "## Rotating keys",
                        "### Emergency rotation",  # the outline's title has runs of spaces, the page one
                        "# Disk space", "## Delete old log files under /var/log and rotate them with logrotate."]
    # the places count the marks: each page starts where its place says
    assert [p.number for p in doc.places] == [1, 2, 3]
    assert doc.text[doc.places[1].offset:].startswith("## Rotating keys\nCreate the new key")
    assert doc.text[doc.places[2].offset:].startswith("# Disk space\n## Delete old log files")
    chunks = chunks_of(doc, 120, 0)
    paths = {c.heading_path for c in chunks}
    assert ("Payment gateway", "Rotating keys", "Emergency rotation") in paths
    assert ("Disk space", "Delete old log files under /var/log and rotate them with logrotate.") in paths
    for chunk in chunks:
        assert doc.text[chunk.start:chunk.end] == chunk.text
        if chunk.heading_path[:2] == ("Payment gateway", "Rotating keys"):
            assert chunk.location.label == "p. 2"


def test_without_an_outline_a_pdf_has_no_headings() -> None:
    pages = ["Payment gateway\nThe gateway takes card payments.", "Disk space\nDelete old log files."]
    doc = load_bytes(text_pdf(pages), "plain.pdf")
    assert doc.text == "Payment gateway\nThe gateway takes card payments.\n\nDisk space\nDelete old log files."
    assert all(c.heading_path == () for c in chunks_of(doc, 40, 0))
