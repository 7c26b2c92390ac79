"""A two-column paper with a ruled figure frame and a ruled table (issue 39): the columns read in order with their
spaces, the table is a Markdown table of its cells, the frame is not a table."""

from __future__ import annotations

from rag_core.loaders import load_bytes
from rag_core.loaders.pdf_tables import is_table
from tests.loaders.checks import chunks_of
from tests.loaders.pdf_samples import (
    FRAME_LABELS,
    KEY_SENTENCES,
    TABLE,
    key_recall,
    paper_pdf,
    paper_source,
    run_on_words,
)

TABLE_MD = ("| Zone | Restart time | Error rate |\n|---|---|---|\n| eu-west | 41 s | 0.4% |\n"
            "| us-east | 38 s | 0.2% |\n| ap-south | 55 s | 0.9% |")


def test_the_columns_read_in_order_with_their_spaces() -> None:
    doc = load_bytes(paper_pdf(2), "paper.pdf")
    assert [p.number for p in doc.places] == [1, 2]
    assert key_recall(doc.text, KEY_SENTENCES, copies=2) == 1.0
    assert run_on_words(doc.text, paper_source())[0] == 0
    flat = " ".join(doc.text[:doc.places[1].offset].split())
    where = [flat.index(s) for s in KEY_SENTENCES]
    assert where == sorted(where)  # the left column's sentences, then the right column's, as laid out


def test_the_table_is_its_cells_and_the_frame_is_text() -> None:
    doc = load_bytes(paper_pdf(1), "paper.pdf")
    assert doc.text.count(TABLE_MD) == 1
    lines = doc.text.splitlines()
    assert [line for line in lines if line.startswith("|")] == TABLE_MD.split("\n")  # the frame is no table
    assert doc.text.count("eu-west") == 1  # the cells are in the table only, not also as lines of text
    assert all(label in lines for label in FRAME_LABELS)  # the text inside the frame stays lines of the page
    flat = " ".join(doc.text.split())
    # the table sits in the left column where it was drawn: after the first paragraph, before its caption
    assert flat.index(KEY_SENTENCES[0]) < flat.index("| Zone |") < flat.index("Table 1: Restart time")
    assert any(TABLE_MD in chunk.text for chunk in chunks_of(doc, 800, 100))  # the table whole in a chunk


def test_what_is_a_table() -> None:
    rows = [list(r) for r in TABLE]
    assert is_table(rows)
    assert not is_table([["Throughput per zone"]])  # a frame: one cell
    assert not is_table([["Figure 1", ""], ["", ""], ["", ""]])  # a chart's grid: cells without text
    assert not is_table([["a", "b"]])  # one row
    assert is_table([["b", "c", "d"]], continues=3)  # the last row of a table continued from the page before
    assert not is_table([["a", "", ""], ["", "b", ""], ["", "", "c"]])  # no row with text in two cells
