"""Where pypdf's text of a page sits on the page: its text cut into pieces, each with the point it starts at and its
type size, so that the PDF loader can take a table's region out of that text (`pdf_tables`) and find a slide's
title (`pdf_slides`) while keeping pypdf's reading order.

The pieces are what pypdf hands its `visitor_text` callback, with the text and graphics matrices in force where each
starts; pypdf builds its result from the same pieces, so joined they are the page's text (checked: when they are not,
`page_pieces` says so and the callers keep the page's text as it was). The loader keeps them from its one pass of
pypdf over the document (up to `MAX_PIECES`), so that a page with a table is not read twice. A point (x, y) is in
PDF user space (origin at the bottom left of the media box); `to_top_left` turns it into pdfplumber's (from the top
left).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Piece:
    start: int  # offset of the piece in the page's raw text
    x: float
    y: float
    size: float  # type size on the page, points (the font size scaled by the matrices)


@dataclass(frozen=True)
class PageText:
    raw: str  # pypdf's text of the page, before `clean_extracted`
    pieces: tuple[Piece, ...]
    left: float  # the media box's left and top edges, to turn user space into pdfplumber's coordinates
    top: float
    rotated: bool  # the page is shown rotated (/Rotate): pdfplumber's coordinates are turned, do not compare them

    def text_of(self, n: int) -> str:
        end = self.pieces[n + 1].start if n + 1 < len(self.pieces) else len(self.raw)
        return self.raw[self.pieces[n].start:end]

    def to_top_left(self, piece: Piece) -> tuple[float, float]:
        return piece.x - self.left, self.top - piece.y


MAX_PIECES = 500_000  # pieces kept over one document (~40 MB); past it a page's pieces are read again when needed


def page_pieces(page: Any, on_text: Callable[[str], None] | None = None,
                room: int = MAX_PIECES) -> tuple[str, PageText | None]:
    """pypdf's text of the page and its pieces, `on_text` called with each piece as pypdf produces it (it may raise
    to stop the extraction); no pieces (None) when they do not make up pypdf's text (then no position can be
    trusted) or are more than `room`."""
    pieces: list[Piece] = []
    parts: list[str] = []
    at = 0

    def visit(text: str, cm: Any, tm: Any, _font: Any, font_size: Any) -> None:
        nonlocal at
        if not text:
            return
        if on_text is not None:
            on_text(text)
        if len(pieces) <= room:
            a, b, c, d, e, f = (float(v) for v in cm)
            x = tm[4] * a + tm[5] * c + e
            y = tm[4] * b + tm[5] * d + f
            scale = math.hypot(tm[2] * a + tm[3] * c, tm[2] * b + tm[3] * d)  # the vertical axis of tm x cm
            pieces.append(Piece(at, x, y, float(font_size or 0) * scale))
        parts.append(text)
        at += len(text)

    raw = page.extract_text(visitor_text=visit) or ""
    if len(pieces) > room or "".join(parts) != raw:
        return raw, None
    box = page.mediabox
    rotated = int(page.get("/Rotate", 0) or 0) % 360 != 0
    return raw, PageText(raw, tuple(pieces), float(box.left), float(box.top), rotated)
