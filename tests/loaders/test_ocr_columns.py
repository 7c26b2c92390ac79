"""OCR's reading order (issue 39): a two-column scan is read column by column, a title across the columns stands
before them, and no printed line goes missing. Pages rendered here from known sentences (tests/loaders/column_pages.py)
and read by the real rapidocr (the `slow` tests); the layout's rules on boxes placed by hand (fast)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rag_core.loaders import load_bytes
from rag_core.loaders.ocr import layout, recognise
from tests.loaders.column_pages import LEFT, RIGHT, TITLE, render_columns
from tests.loaders.samples import CJK_FONT, png_bytes

needs_ocr = pytest.mark.skipif(not CJK_FONT.is_file(), reason=f"{CJK_FONT} is missing (Debian: fonts-noto-cjk)")


def squeezed(text: str) -> str:
    return "".join(text.split())


def positions(text: str, sentences: tuple[str, ...]) -> list[int]:
    """Where each sentence starts in `text`, whitespace ignored (-1: not there whole)."""
    flat = squeezed(text)
    return [flat.find(squeezed(s)) for s in sentences]


def in_order(found: list[int]) -> bool:
    return all(p >= 0 for p in found) and found == sorted(found)


@pytest.mark.slow  # runs OCR
@needs_ocr
def test_a_two_column_page_is_read_column_by_column() -> None:
    pytest.importorskip("rapidocr_onnxruntime")
    text = load_bytes(png_bytes(render_columns()), "paper.png").text
    found = positions(text, LEFT + RIGHT)
    assert in_order(found), (found, text)  # every sentence whole, the left column's before the right's


@pytest.mark.slow  # runs OCR
@needs_ocr
def test_a_title_across_the_columns_comes_first_and_stands_apart() -> None:
    pytest.importorskip("rapidocr_onnxruntime")
    text = load_bytes(png_bytes(render_columns(title=TITLE)), "paper.png").text
    assert text.startswith(TITLE + "\n\n"), text
    assert in_order(positions(text, (TITLE, *LEFT, *RIGHT))), text


@pytest.mark.slow  # runs OCR
@needs_ocr
def test_no_printed_line_of_a_page_goes_missing() -> None:
    """Long upright lines that rapidocr's direction classifier turned upside down (and then dropped as unreadable)."""
    pytest.importorskip("rapidocr_onnxruntime")
    image = render_columns(columns=(LEFT + RIGHT,), lead=1.25)
    text = load_bytes(png_bytes(image), "page.png").text
    assert in_order(positions(text, LEFT + RIGHT)), text
    assert len([line for line in text.splitlines() if line]) == 6, text  # the six printed lines


@pytest.mark.slow  # runs OCR (three readings)
@needs_ocr
def test_a_page_scanned_upside_down_is_read_top_to_bottom() -> None:
    pytest.importorskip("rapidocr_onnxruntime")
    text = load_bytes(png_bytes(render_columns(title=TITLE).rotate(180)), "upside-down.png").text
    assert in_order(positions(text, (TITLE, *LEFT, *RIGHT))), text


def box(left: float, top: float, right: float, bottom: float, text: str, score: float = 0.99) -> Any:
    return [[left, top], [right, top], [right, bottom], [left, bottom]], text, score


def test_columns_are_found_between_boxes_and_read_in_turn() -> None:
    rows = [box(100, 100 + 40 * n, 500, 130 + 40 * n, f"left {n}") for n in range(6)]
    rows += [box(600, 102 + 40 * n, 990 - 30 * (n % 2), 131 + 40 * n, f"right {n}") for n in range(6)]
    rows += [box(520, 400, 580, 430, "7")]  # a page number in the gutter, under the columns
    assert layout(rows).split("\n") == [*(f"left {n}" for n in range(6)), *(f"right {n}" for n in range(6)), "", "7"]


def test_a_box_across_the_gutter_cuts_the_columns_into_sections() -> None:
    rows = [box(100, 20, 990, 60, "Title")]
    rows += [box(100, 100 + 40 * n, 500, 130 + 40 * n, f"a{n}") for n in range(4)]
    rows += [box(600, 100 + 40 * n, 990, 130 + 40 * n, f"b{n}") for n in range(4)]
    rows += [box(100, 300, 990, 330, "Figure 1 across the page")]
    rows += [box(100, 360 + 40 * n, 500, 390 + 40 * n, f"c{n}") for n in range(4)]
    rows += [box(600, 360 + 40 * n, 990, 390 + 40 * n, f"d{n}") for n in range(4)]
    lines = [line for line in layout(rows).split("\n") if line]
    assert lines == ["Title", "a0", "a1", "a2", "a3", "b0", "b1", "b2", "b3", "Figure 1 across the page",
                     "c0", "c1", "c2", "c3", "d0", "d1", "d2", "d3"]


def test_an_abstract_across_the_page_comes_before_the_columns() -> None:
    rows = [box(100, 20 + 30 * n, 990, 42 + 30 * n, f"abstract {n}") for n in range(6)]
    rows += [box(100, 220 + 30 * n, 500, 242 + 30 * n, f"a{n}") for n in range(14)]
    rows += [box(600, 220 + 30 * n, 990, 242 + 30 * n, f"b{n}") for n in range(14)]
    assert layout(rows).split("\n") == [*(f"abstract {n}" for n in range(6)), "", *(f"a{n}" for n in range(14)),
                                        *(f"b{n}" for n in range(14))]  # the abstract's lines one paragraph


def test_a_table_or_a_short_gutter_is_read_line_by_line() -> None:
    # a table: narrow cells in columns, but text across the page above and below it for most of its height
    prose = [box(100, 30 * n, 990, 30 * n + 22, f"prose {n}") for n in range(10)]
    table = [box(100 + 300 * c, 320 + 30 * r, 180 + 300 * c, 342 + 30 * r, f"r{r}c{c}")
             for r in range(3) for c in range(3)]
    more = [box(100, 420 + 30 * n, 990, 442 + 30 * n, f"more {n}") for n in range(8)]
    lines = layout(prose + table + more).split("\n")
    assert lines[10:13] == ["r0c0 r0c1 r0c2", "r1c0 r1c1 r1c2", "r2c0 r2c1 r2c2"]
    # a page that is all table: its columns are not filled with prose, so rows stay rows
    grid = [box(100 + 300 * c, 30 * r, 160 + 300 * c, 30 * r + 22, f"{r}.{c}") for r in range(12) for c in range(3)]
    assert layout(grid).split("\n")[:2] == ["0.0 0.1 0.2", "1.0 1.1 1.2"]
    # one column with ragged paragraph ends: no gutter
    ragged = [box(100, 30 * n, 990 if n % 3 else 400, 30 * n + 22, f"p{n}") for n in range(12)]
    assert layout(ragged).split("\n") == [f"p{n}" for n in range(12)]


def test_a_tall_box_does_not_swallow_the_next_line() -> None:
    """Measured against the union of a line's boxes, a tall box (a stamp, a box over two lines) made the next printed
    line join the line above; its words were interleaved by x and the line was gone."""
    rows = [box(0, 0, 300, 30, "line one"), box(310, 0, 400, 60, "STAMP"), box(0, 38, 300, 68, "line two")]
    assert layout(rows).split("\n") == ["line one STAMP", "line two"]
    # boxes that overlap across x are stacked lines, however close (tight leading, boxes padded by the detector)
    rows = [box(0, 0, 300, 40, "upper"), box(0, 18, 290, 58, "lower")]
    assert layout(rows).split("\n") == ["upper", "lower"]


class Engine:
    """rapidocr's call: its answers in turn; what it was asked (classifier on, the page turned)."""

    def __init__(self, *answers: list[Any]) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[bool, bool]] = []

    def __call__(self, pixels: Any, use_cls: bool, text_score: float) -> tuple[list[Any], None]:
        self.calls.append((use_cls, bool(pixels[0, 0, 0] == 1)))
        return self.answers.pop(0), None


PIXELS = np.zeros((100, 60, 3), dtype=np.uint8)  # a page, its last pixel marked: turned, it comes first
PIXELS[-1, -1, 0] = 1


def test_lines_are_read_upright_and_turned_only_when_they_read_badly() -> None:
    clean = Engine([box(0, 0, 9, 9, "ok"), box(0, 20, 9, 29, "fine", 0.9)])
    assert [t for _, t, _ in recognise(clean, PIXELS)] == ["ok", "fine"] and clean.calls == [(False, False)]
    some = Engine([box(0, 0, 9, 9, "ok"), box(0, 20, 9, 29, "~#", 0.2), box(0, 40, 9, 49, "..", 0.1)],
                  [box(0, 0, 9, 9, "0k", 0.6), box(0, 20, 9, 29, "turned", 0.95), box(0, 40, 9, 49, "..", 0.05)])
    assert [t for _, t, _ in recognise(some, PIXELS)] == ["ok", "turned"]
    assert some.calls == [(False, False), (True, False)]
    upside = Engine([box(0, 0, 9, 9, "~", 0.1), box(0, 20, 9, 29, "#", 0.2), box(0, 40, 9, 49, "ok")],
                    [box(0, 0, 9, 9, "last", 0.9), box(0, 20, 9, 29, "second", 0.95), box(0, 40, 9, 49, "0k", 0.3)],
                    [box(0, 0, 9, 9, "first"), box(0, 20, 9, 29, "second"), box(0, 40, 9, 49, "last")])
    assert layout(recognise(upside, PIXELS)) == "first\nsecond\nlast"  # a page scanned upside down is turned
    assert upside.calls == [(False, False), (True, False), (False, True)]
