"""PowerPoint (.pptx, with python-pptx) -> one `# title` section per slide: its text in reading order (top to
bottom, then left to right; bullets as `-` items indented by level; tables as Markdown tables with their
header row), then its speaker notes as a `Notes:` paragraph. Each slide is a `Place` (unit "slide"), so every
chunk knows its slide numbers; a slide without a title is headed `Slide N`. Slides without any text are left
out (their numbers stay). The package is checked first (`packages`: zip and XML bombs), the slides' text is
counted against the budget as it is read, and the deadline is checked between slides.
"""

from __future__ import annotations

import io
import re
from typing import Any

from ..errors import LoaderError
from ..records import SLIDE, Place
from .extracted import Extracted, Format, clean_extracted, reason
from .html import table_blocks
from .limits import TextBudget
from .options import LoadOptions
from .packages import open_package

_WS = re.compile(r"\s+")
_LOOKS_LIKE_BLOCK = re.compile(r" {0,3}(?:#{1,6}(?:\s|$)|`{3}|~{3})")


def pptx_text(data: bytes, name: str, _ext: str, budget: TextBudget, _options: LoadOptions) -> Extracted:
    """One section per slide with text, one `slide` place each."""
    if data.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        raise LoaderError(f"{name}: is an old PowerPoint .ppt file or a password-protected deck, not a .pptx; open "
                          "it in PowerPoint and save it as .pptx without a password", code="unsupported")
    open_package(data, name, budget, "PowerPoint deck").close()
    sections: list[str] = []
    places: list[Place] = []
    size = 0
    try:
        from pptx import Presentation

        deck = Presentation(io.BytesIO(data))
        for number, slide in enumerate(deck.slides, start=1):
            budget.tick(f"slide {number}")
            section = _slide(slide, number, budget)
            if section:
                offset = size + (2 if sections else 0)
                places.append(Place(offset, SLIDE, number))
                sections.append(section)
                size = offset + len(section)
    except LoaderError:
        raise
    except Exception as exc:  # python-pptx / zipfile / lxml raise many types on damaged files
        raise LoaderError(f"{name}: could not read the PowerPoint deck ({reason(exc)}); the file may be damaged: open "
                          "it in PowerPoint and save it again as .pptx", code="undecodable") from exc
    if not sections:
        raise LoaderError(f"{name}: the deck's slides have no text; nothing to index", code="empty")
    return Extracted("\n\n".join(sections), "pptx", tuple(places))


FORMAT = Format(("pptx",), pptx_text)


def _slide(slide: Any, number: int, budget: TextBudget) -> str:
    """One slide's section, "" when it has no text."""
    title_shape = slide.shapes.title
    title = _WS.sub(" ", title_shape.text_frame.text).strip() if title_shape is not None else ""
    blocks: list[str] = []
    for shape in _reading_order(_shapes(slide.shapes)):
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        block = _shape_text(shape)
        if block:
            budget.add(len(block) + 2)
            blocks.append(block)
    if slide.has_notes_slide:  # reading notes_slide otherwise would add an empty one
        notes = _WS.sub(" ", slide.notes_slide.notes_text_frame.text if slide.notes_slide.notes_text_frame else "")
        if notes.strip():
            budget.add(len(notes) + 9)
            blocks.append("Notes: " + notes.strip())
    if not title and not blocks:
        return ""
    heading = "# " + (title or f"Slide {number}")
    budget.add(len(heading) + 2)
    return clean_extracted("\n\n".join([heading, *blocks]))


def _shapes(shapes: Any) -> list[Any]:
    """Every shape, group shapes opened (iteratively: groups nest)."""
    out, stack = [], list(shapes)[::-1]
    while stack:
        shape = stack.pop()
        if getattr(shape, "shape_type", None) is not None and shape.shape_type == 6:  # MSO_SHAPE_TYPE.GROUP
            stack.extend(list(shape.shapes)[::-1])
        else:
            out.append(shape)
    return out


def _reading_order(shapes: list[Any]) -> list[Any]:
    return sorted(shapes, key=lambda s: ((s.top or 0) // 50_000, s.left or 0))  # rows of ~1.4 mm


def _shape_text(shape: Any) -> str:
    if getattr(shape, "has_table", False) and shape.has_table:
        rows = [[_WS.sub(" ", cell.text).strip().replace("|", "\\|") for cell in row.cells] for row in shape.table.rows]
        rows = [r for r in rows if any(r)]
        if len(rows) < 2:
            return " · ".join(c for r in rows for c in r if c)
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        return "\n\n".join(table_blocks(rows[0], rows[1:]))
    if not getattr(shape, "has_text_frame", False) or not shape.has_text_frame:
        return ""
    lines = []
    bulleted = shape.is_placeholder and len(shape.text_frame.paragraphs) > 1
    for paragraph in shape.text_frame.paragraphs:
        text = _WS.sub(" ", paragraph.text).strip()
        if not text:
            continue
        if bulleted or paragraph.level:
            lines.append("   " * paragraph.level + "- " + text)
        else:
            lines.append("\\" + text if _LOOKS_LIKE_BLOCK.match(text) else text)
    return "\n".join(lines)
