"""Ruled tables of a PDF's pages (pdfplumber finds them), written as Markdown tables in their place among the page's
text, the rest of the page's text left as pypdf read it.

Why not let pdfplumber read the whole page around a table (as this loader did until issue 39): pdfplumber reads a
page line by line across its full width, so on a two-column page the lines of both columns merge, and it joins glyphs
closer than 3 pt, so a justified TeX line loses its narrow spaces: a USENIX paper read that way had a 28-letter
run-on word in 70 of its 133 chunks (bench/docs_pdf.py measures it). So the page's text stays pypdf's, in reading
order, and only the pieces of it that start inside a table's box are taken out, the table written where its first
piece was (`pdf_layout`). A page whose pieces cannot be placed (pypdf's pieces do not make up its text, or the page
is shown rotated) is read the old way: pdfplumber's text above, between and below the tables.

A box is a table when it has rows and columns of text: at least 2 columns and 2 rows with text in 2 cells or more,
and text in at least half of its cells. A figure's frame (one box: one cell), a Beamer block, a chart's grid
lines are not, and their text stays where pypdf read it.

A table that runs on from the previous page (the previous page ended with a table of as many columns, and this one
starts with it) takes that table's header; a header row the PDF repeats is dropped, since every block carries it.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

from .extracted import clean_extracted
from .html import table_blocks
from .limits import TextBudget
from .pdf_layout import PageText, page_pieces

PAGE_MARGIN_CHARS = 40  # text above or below a table shorter than this is a running header or page number
CELL_X_TOLERANCE = 1.5  # points between glyphs of one word in a cell (pdfplumber's 3 loses TeX's narrow spaces)
_WS = re.compile(r"\s+")
_BLANK_LINES = re.compile(r"\n[ \t]*\n\s*")

Rows = list[list[str]]
Segment = tuple[str, "str | int"]  # ("text", text) or ("table", index of the page's table)


def is_table(rows: Rows, continues: int = 0) -> bool:
    """Rows and columns of text (the module's rule); a table continued from the previous page (`continues`: its
    number of columns) needs one such row only."""
    width = max((len(r) for r in rows), default=0)
    if width < 2:
        return False
    full = sum(1 for r in rows if sum(1 for c in r if c) >= 2)
    filled = sum(1 for r in rows for c in r if c)
    enough = 1 if continues == width else 2
    return full >= enough and filled * 2 >= width * len(rows)


def read_tables(data: bytes, pypdf_pages: Sequence[Any], layouts: Sequence[PageText | None], indexes: list[int],
                texts: list[str], budget: TextBudget) -> None:
    """Rewrite the pages at `indexes` that hold tables: their text with each table in its place (`layouts`: the
    pages' pieces as pypdf read them, None where not kept: read again)."""
    import pdfplumber

    open_table: tuple[list[str], int] | None = None  # header and page index of a table ending its page
    with pdfplumber.open(io.BytesIO(data), password="") as pdf:
        for i in indexes:
            budget.tick(f"the tables of page {i + 1}")
            page = pdf.pages[i]
            carried = open_table if open_table is not None and open_table[1] == i - 1 else None
            found: list[tuple[tuple[float, float, float, float], Rows]] = []
            for table in sorted(page.find_tables(), key=lambda t: t.bbox[1]):
                rows = [[_cell(c) for c in row] for row in table.extract(x_tolerance=CELL_X_TOLERANCE)]
                rows = [r for r in rows if any(r)]
                if is_table(rows, len(carried[0]) if carried is not None and not found else 0):
                    found.append((table.bbox, rows))
            if not found:
                continue
            layout = layouts[i] if layouts[i] is not None else page_pieces(pypdf_pages[i])[1]
            if layout is not None and not layout.rotated:
                segments = _spliced(layout, [box for box, _ in found])
            else:
                segments = _by_region(page, [box for box, _ in found])
            text, open_table = _compose(segments, [rows for _, rows in found], carried, i)
            budget.add(max(0, len(text) - len(texts[i])))
            texts[i] = text


def _spliced(layout: PageText, boxes: list[tuple[float, float, float, float]]) -> list[Segment]:
    """The page's text in pypdf's order, each table in place of the pieces that start inside its box."""
    segments: list[Segment] = []
    current: list[str] = []
    placed: set[int] = set()
    for n, piece in enumerate(layout.pieces):
        text = layout.text_of(n)
        inside = _inside(layout.to_top_left(piece), boxes) if text.strip() else None
        if inside is None:
            current.append(text)
        elif inside not in placed:
            segments += [("text", "".join(current)), ("table", inside)]
            current = []
            placed.add(inside)
    segments.append(("text", "".join(current)))
    segments += [("table", k) for k in range(len(boxes)) if k not in placed]  # no piece started in it
    return segments


def _inside(point: tuple[float, float], boxes: list[tuple[float, float, float, float]]) -> int | None:
    x, y = point
    for k, (x0, top, x1, bottom) in enumerate(boxes):
        if x0 - 1 <= x <= x1 + 1 and top - 1 <= y <= bottom + 1:
            return k
    return None


def _by_region(page: Any, boxes: list[tuple[float, float, float, float]]) -> list[Segment]:
    """The old way, for pages whose pieces cannot be placed: pdfplumber's text of the full-width bands above,
    between and below the tables."""
    x0, top, x1, bottom = page.bbox
    segments: list[Segment] = []
    cursor = top
    for k, box in enumerate(boxes):
        segments += [("text", _region_text(page, (x0, cursor, x1, max(cursor, box[1])))), ("table", k)]
        cursor = max(cursor, box[3])
    segments.append(("text", _region_text(page, (x0, cursor, x1, bottom))))
    return segments


def _compose(segments: list[Segment], tables: list[Rows], carried: tuple[list[str], int] | None,
             i: int) -> tuple[str, tuple[list[str], int] | None]:
    """The page's text with its tables as Markdown, and the table left open at its end (for the next page)."""
    blocks: list[str] = []
    open_table: tuple[list[str], int] | None = None
    first = True
    for kind, value in segments:
        if kind == "text":
            text = clean_extracted(str(value)).strip()
            if text:
                blocks.append(text)
            continue
        rows = list(tables[int(value)])
        header: list[str] | None = None
        above = sum(len(b) for b in blocks)
        if first and carried is not None and len(carried[0]) == len(rows[0]) and above < PAGE_MARGIN_CHARS:
            header = carried[0]
            if rows[0] == header:  # the PDF repeats the header row on the new page
                rows = rows[1:]
            blocks = []  # a running header above a continued table
        if header is None:
            header, rows = rows[0], rows[1:]
        blocks += table_blocks(header, rows)
        blocks.append("\0")  # where the last table ends, to measure the text below it
        first = False
        open_table = (header, i)
    last = max(n for n, b in enumerate(blocks) if b == "\0")
    if sum(len(b) for b in blocks[last + 1:]) >= PAGE_MARGIN_CHARS:
        open_table = None  # the page goes on after its last table: a table on the next one is new
    text = "\n\n".join(b for b in blocks if b != "\0")
    return _BLANK_LINES.sub("\n\n", clean_extracted(text)).strip(), open_table


def _region_text(page: Any, bbox: tuple[float, float, float, float]) -> str:
    if bbox[3] - bbox[1] < 1:
        return ""
    return clean_extracted(page.crop(bbox).extract_text() or "").strip()


def _cell(value: str | None) -> str:
    return _WS.sub(" ", value or "").strip().replace("|", "\\|")
