"""Issue 39, PDFs as they are laid out: a two-column paper and a slide deck, read four ways in one run.

The documents are made on the spot (tests/loaders/pdf_samples.py, the loader tests' generators): a US Letter
two-column paper set as TeX sets it (each word placed on its own, justified gaps of 2.0-3.4 pt, no space glyphs),
each page with a ruled figure frame (two panels side by side) and a ruled 4 x 3 table; and a Beamer-like deck (128 x
96 mm pages, a navigation line, a title, bullets, a footline; one slide's bullets in a block: a ruled title bar over a
ruled body).

The readers:

- "old loader": this loader before issue 39, kept here (`old_loader`): pypdf's text, but every page pypdfium2 finds
  4 or more paths on re-read by pdfplumber around the boxes it finds, across the page's full width;
- "loader": `rag_core.loaders.load_bytes` as ingest calls it;
- "pypdf": pypdf's `extract_text` alone; "pdfplumber": pdfplumber's `extract_text` alone.

The figures, per document and reader:

- run-on words: the share of words (runs of letters) that are run-on: 20 letters or more and not a word of the text
  the PDF was made from, i.e. words whose spaces were lost (`tests.loaders.pdf_samples.run_on_words`);
- key-sentence recall: the share of the key sentences (the paper's 12 per page; the deck's titles and bullets) found
  whole in the text, whitespace-normalised;
- tables: Markdown table header rows in the text (the paper has 1 real table per page, the deck none);
- chunks, and chunks across places: chunks (800/100) of the loaders' documents, and those spanning more than one
  page or slide (a deck's chunk should never);
- pages/s: best of 3 reads.

`measure()` returns the figures as a dict; `python -m bench.docs_pdf` prints them.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from typing import Any

from bench.common import best_of
from tests.loaders.pdf_samples import (
    KEY_SENTENCES,
    SLIDES,
    deck_pdf,
    key_recall,
    paper_pdf,
    paper_source,
    run_on_words,
)

PAPER_PAGES = 4
_TABLE_HEADER = re.compile(r"^\|(?:---\|)+$", re.M)


# --- the old loader (before issue 39), kept to measure against ---------------------------------------------

def old_loader(data: bytes) -> tuple[str, list[int]]:
    """The text and each page's offset as the loader read them before issue 39."""
    from rag_core.loaders.limits import TextBudget
    from rag_core.loaders.pdf import MIN_RULES, _drawn_pages, _pypdf_pages

    budget = TextBudget("old.pdf", 10_000_000)
    texts = _pypdf_pages(data, "old.pdf", budget).texts
    tables = [i for i, (_, paths) in enumerate(_drawn_pages(data)) if paths >= MIN_RULES and texts[i]]
    if tables:
        _old_read_tables(data, tables, texts)
    offsets: list[int] = []
    parts: list[str] = []
    size = 0
    for text in texts:
        if text:
            offset = size + (2 if parts else 0)
            offsets.append(offset)
            parts.append(text)
            size = offset + len(text)
    return "\n\n".join(parts), offsets


def _old_read_tables(data: bytes, indexes: list[int], texts: list[str]) -> None:
    """The old `pdf._read_tables`: every box pdfplumber finds is a table, and the page's text around them is
    pdfplumber's, read across the full width of the page."""
    import pdfplumber

    from rag_core.loaders.extracted import clean_extracted
    from rag_core.loaders.html import table_blocks

    def region(page: Any, bbox: tuple[float, float, float, float]) -> str:
        if bbox[3] - bbox[1] < 1:
            return ""
        return clean_extracted(page.crop(bbox).extract_text() or "").strip()

    def cell(value: str | None) -> str:
        return " ".join((value or "").split()).replace("|", "\\|")

    open_table: tuple[list[str], int] | None = None
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        for i in indexes:
            page = pdf.pages[i]
            found = sorted(page.find_tables(), key=lambda t: t.bbox[1])
            if not found:
                continue
            carried = open_table if open_table is not None and open_table[1] == i - 1 else None
            blocks: list[str] = []
            x0, top, x1, bottom = page.bbox
            cursor = top
            for n, table in enumerate(found):
                above = region(page, (x0, cursor, x1, max(cursor, table.bbox[1])))
                rows = [r for r in ([cell(c) for c in row] for row in table.extract()) if any(r)]
                if not rows:
                    continue
                header: list[str] | None = None
                if n == 0 and carried is not None and len(carried[0]) == len(rows[0]) and len(above) < 40:
                    header = carried[0]
                    if rows[0] == header:
                        rows = rows[1:]
                    above = ""
                if above:
                    blocks.append(above)
                if header is None:
                    header, rows = rows[0], rows[1:]
                blocks += table_blocks(header, rows)
                cursor = table.bbox[3]
                open_table = (header, i)
            below = region(page, (x0, cursor, x1, bottom))
            if len(below) >= 40:
                open_table = None
            if below:
                blocks.append(below)
            texts[i] = clean_extracted("\n\n".join(blocks)).strip()


# --- the readers ------------------------------------------------------------------------------------------

def _pypdf(data: bytes) -> str:
    from pypdf import PdfReader

    return "\n\n".join(p.extract_text() or "" for p in PdfReader(io.BytesIO(data)).pages)


def _pdfplumber(data: bytes) -> str:
    import pdfplumber

    with pdfplumber.open(io.BytesIO(data)) as pdf:
        return "\n\n".join(p.extract_text() or "" for p in pdf.pages)


def _chunk_figures(text: str, places: list[tuple[int, str, int]]) -> dict[str, Any]:
    from rag_core.chunking import chunk_document
    from rag_core.records import Document, Place

    doc = Document("x.pdf", text, "x.pdf", "pdf", 0, "", places=tuple(Place(o, u, n) for o, u, n in places))
    chunks = chunk_document(doc, 800, 100)
    return {"chunks": len(chunks),
            "chunks_across_places": sum(1 for c in chunks if c.location and c.location.first != c.location.last)}


def _readers() -> dict[str, Callable[[bytes], tuple[str, dict[str, Any]]]]:
    from rag_core.loaders import load_bytes
    from rag_core.records import PAGE

    def old(data: bytes) -> tuple[str, dict[str, Any]]:
        text, offsets = old_loader(data)
        return text, _chunk_figures(text, [(o, PAGE, n) for n, o in enumerate(offsets, start=1)])

    def new(data: bytes) -> tuple[str, dict[str, Any]]:
        doc = load_bytes(data, "x.pdf")
        return doc.text, _chunk_figures(doc.text, [(p.offset, p.unit, p.number) for p in doc.places])

    return {"old loader": old, "loader": new, "pypdf": lambda d: (_pypdf(d), {}),
            "pdfplumber": lambda d: (_pdfplumber(d), {})}


def _score(text: str, source: str, sentences: tuple[str, ...], copies: int) -> dict[str, Any]:
    runon, words = run_on_words(text, source)
    return {"run_on_share": runon / max(1, words), "run_on_words": runon, "words": words,
            "key_recall": key_recall(text, sentences, copies), "tables": len(_TABLE_HEADER.findall(text))}


def measure(repeat: int = 3) -> dict[str, Any]:
    """{document: {reader: figures}} for the two-column paper and the deck (see the module's doc)."""
    deck_sentences = tuple(s for title, bullets in SLIDES for s in (title, *bullets))
    documents = {
        f"two-column paper, {PAPER_PAGES} pages": (paper_pdf(PAPER_PAGES), PAPER_PAGES, paper_source(),
                                                    KEY_SENTENCES, PAPER_PAGES),
        f"Beamer-like deck, {len(SLIDES)} slides": (deck_pdf(), len(SLIDES), " ".join(deck_sentences),
                                                    deck_sentences, 1),
    }
    out: dict[str, Any] = {}
    for name, (data, pages, source, sentences, copies) in documents.items():
        out[name] = {}
        for reader, read in _readers().items():
            seconds, (text, extra) = best_of(lambda read=read, data=data: read(data), repeat)  # type: ignore[misc]
            out[name][reader] = {**_score(text, source, sentences, copies), **extra, "pages_s": pages / seconds}
    return out


def render(figures: dict[str, Any]) -> str:
    """The figures as one table: a row per document and reader."""
    from bench.common import table

    rows = [[document if i == 0 else "", reader, f"{f['run_on_share']:.1%}", f"{f['key_recall']:.0%}", f["tables"],
             f"{f['chunks_across_places']} of {f['chunks']}" if "chunks" in f else "–", f["pages_s"]]
            for document, readers in figures.items() for i, (reader, f) in enumerate(readers.items())]
    return table(["document", "reader", "run-on words", "key sentences whole", "tables", "chunks across pages",
                  "pages/s"], rows, 1)


if __name__ == "__main__":
    print(json.dumps(measure(), indent=1, ensure_ascii=False))
