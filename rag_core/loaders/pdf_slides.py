"""A PDF that is a slide deck (Beamer, a deck exported from PowerPoint, Keynote or Google Slides) is read as a
.pptx is (`loaders.slides`): each page a slide, its place unit "slide" (cited "slide 3"), its text one section headed
by the slide's title, so that chunking never packs two slides into one chunk (a chunk cited "pp. 1–13" helps nobody).

A deck is told by its pages' shape, which no paper or report has: at least 2 pages, and 80% of them landscape with
the proportions of a screen (4:3, 16:10 or 16:9, within 2%: Beamer's 128 x 96 mm, PowerPoint's 10 x 7.5 in and
13.33 x 7.5 in), with few lines (the median page at most 25 lines of text). A landscape A4 or Letter page (1.41, 1.29)
is not a slide.

A slide's title is the text in the largest type in the top 40% of the page, when it is larger (by 15%) than the type
most of the page's characters are set in; its line is moved to the top of the slide's text as a `#` heading (a
Beamer navigation bar above it would otherwise start the slide). A slide without one is headed `Slide N`, as a
.pptx slide without a title is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .limits import TextBudget
from .pdf_layout import PageText, page_pieces

ASPECTS = (4 / 3, 16 / 10, 16 / 9)
ASPECT_TOLERANCE = 0.02  # Letter landscape (1.294) is 2.9% from 4:3
SLIDE_SHARE = 0.8  # of the pages that must have a slide's shape
MAX_MEDIAN_LINES = 25
TITLE_ZONE = 0.4  # the top part of the page a title is looked for in
TITLE_LARGER = 1.15
_WS = re.compile(r"\s+")


def is_deck(sizes: Sequence[tuple[float, float]], texts: Sequence[str]) -> bool:
    """The pages (`sizes`: width and height as shown, `texts`) are a slide deck's (the module's rule)."""
    if len(sizes) < 2:
        return False
    shaped = sum(1 for w, h in sizes if h > 0 and w > h and any(abs(w / h / a - 1) <= ASPECT_TOLERANCE
                                                                for a in ASPECTS))
    if shaped < SLIDE_SHARE * len(sizes):
        return False
    lines = sorted(sum(1 for line in text.split("\n") if line.strip()) for text in texts if text)
    return bool(lines) and lines[len(lines) // 2] <= MAX_MEDIAN_LINES


def title_slides(pypdf_pages: Sequence[Any], layouts: Sequence[PageText | None], texts: list[str],
                 budget: TextBudget) -> None:
    """Head each slide's text in `texts` by its title (the module's rule; `layouts`: the pages' pieces as pypdf read
    them, None where not kept: read again)."""
    for i, text in enumerate(texts):
        if not text:
            continue
        budget.tick(f"the title of slide {i + 1}")
        title = _title(pypdf_pages[i], layouts[i])
        lines = text.split("\n")
        found = next((n for n, line in enumerate(lines) if title and title in _norm(line)), None) if title else None
        heading = _norm(lines.pop(found)).lstrip("# ") if found is not None else f"Slide {i + 1}"
        rest = "\n".join(lines).strip()
        titled = f"# {heading}" + (f"\n{rest}" if rest else "")
        budget.add(max(0, len(titled) - len(text)))
        texts[i] = titled


def _title(page: Any, layout: PageText | None) -> str:
    """The page's title text, whitespace-normalised, or "" (the module's rule)."""
    if layout is None:
        try:
            layout = page_pieces(page)[1]
        except Exception:  # the text was read once already; a title is a help, never a reason to refuse the file
            return ""
    if layout is None or layout.rotated:
        return ""
    height = float(page.mediabox.height) or 1.0
    weights: dict[float, int] = {}
    best: tuple[float, str] | None = None
    for n, piece in enumerate(layout.pieces):
        text = _norm(layout.text_of(n))
        if not text:
            continue
        size = round(piece.size, 1)
        weights[size] = weights.get(size, 0) + len(text)
        if layout.to_top_left(piece)[1] <= TITLE_ZONE * height and (best is None or size > best[0]):
            best = (size, text)
    if best is None or not weights:
        return ""
    common = max(weights, key=lambda s: weights[s])
    return best[1] if best[0] >= TITLE_LARGER * common else ""


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip()
