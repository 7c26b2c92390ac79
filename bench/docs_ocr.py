"""OCR of multi-column scans (issue 39, part 4): the reading order `loaders.ocr` puts rapidocr's boxes in now (columns
found from their gutters, lines read upright first) next to the line-by-line join it had before, on the same pages in
the same run.

The pages are rendered from known sentences (tests/loaders/column_pages.py): two English columns, the same under a
title across the page, two Chinese columns, and one column of long lines (where rapidocr's direction classifier turned
upright lines upside down and a printed line went missing). Figures per page and reading:

- cer: character error rate against the sentences in reading order (whitespace ignored): a column read across the
  page counts as errors too;
- whole: the share of the sentences found whole (whitespace ignored);
- in_order: the share of consecutive sentence pairs (both found) that come out in order;
- pages_s: pages per second, OCR included (the model loaded before the timings).

"Before" is the old code path, kept below as it was (`old_read`: rapidocr with its defaults, `old_layout`).
`measure(quick)` returns the figures; `python -m bench.docs_ocr [--quick]` prints them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from functools import partial
from statistics import median
from typing import Any

from bench.common import best_of, log, main
from tests.loaders.column_pages import LEFT, LEFT_ZH, RIGHT, RIGHT_ZH, TITLE, render_columns
from tests.loaders.samples import cer

_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\u3000-\u303f]")


def old_layout(boxes: list[Any]) -> str:
    """rag_core.loaders.ocr.layout before issue 39: lines by vertical overlap with the line's union, across the page."""
    items = []
    for points, text, _score in boxes:
        text = " ".join(str(text).split())
        if not text:
            continue
        ys = [p[1] for p in points]
        xs = [p[0] for p in points]
        items.append((min(ys), max(ys), min(xs), text))
    if not items:
        return ""
    items.sort(key=lambda i: ((i[0] + i[1]) / 2, i[2]))
    lines: list[list[tuple[float, float, float, str]]] = []
    for item in items:
        middle = (item[0] + item[1]) / 2
        line = lines[-1] if lines else None
        if line is not None and min(i[0] for i in line) <= middle <= max(i[1] for i in line):
            line.append(item)
        else:
            lines.append([item])
    height = median(i[1] - i[0] for i in items) or 1.0
    out: list[str] = []
    previous_bottom = None
    for line in lines:
        line.sort(key=lambda i: i[2])
        text = line[0][3]
        for item in line[1:]:
            joint = "" if _CJK.match(text[-1]) and _CJK.match(item[3][0]) else " "
            text += joint + item[3]
        top = min(i[0] for i in line)
        if previous_bottom is not None:
            out.append("\n\n" if top - previous_bottom > 1.5 * height else "\n")
        out.append(text)
        previous_bottom = max(i[1] for i in line)
    return "".join(out)


def old_read(image: Any) -> str:
    """OCR as `read_image` did before: rapidocr with its defaults (direction classifier on), the old layout."""
    import numpy as np

    from rag_core.loaders.extracted import clean_extracted
    from rag_core.loaders.ocr import _engine_lock, _get_engine

    with _engine_lock:
        result, _ = _get_engine()(np.asarray(image), use_cls=True, text_score=0.5)
    return clean_extracted(old_layout(result or []))


def cases(quick: bool) -> list[tuple[str, Any, tuple[str, ...]]]:
    """(case, page image, its sentences in reading order)."""
    out = [("two columns, English", render_columns(), LEFT + RIGHT),
           ("title over two columns", render_columns(title=TITLE), (TITLE, *LEFT, *RIGHT))]
    if not quick:
        out += [("two columns, Chinese", render_columns((LEFT_ZH, RIGHT_ZH)), LEFT_ZH + RIGHT_ZH),
                ("one column of long lines", render_columns((LEFT + RIGHT,), lead=1.25), LEFT + RIGHT)]
    return out


def order_figures(text: str, sentences: Sequence[str]) -> dict[str, float]:
    flat = "".join(text.split())
    found = [flat.find("".join(s.split())) for s in sentences]
    pairs = [(a, b) for a, b in zip(found, found[1:]) if a >= 0 and b >= 0]
    return {"cer": cer(text, "".join(sentences)), "whole": sum(p >= 0 for p in found) / len(found),
            "in_order": sum(a < b for a, b in pairs) / len(pairs) if pairs else 0.0}


def measure(quick: bool = False) -> dict[str, Any]:
    """The figures of every page, before and after: {"cases": [{"case", "before": {...}, "after": {...}}], "pages"}."""
    from rag_core.loaders import ocr_available
    from rag_core.loaders.ocr import read_image

    if not ocr_available():
        raise SystemExit('bench.docs_ocr needs the OCR extra: pip install ".[ocr]"')
    pages = cases(quick)
    read_image(pages[0][1])  # the model loads once, outside the timings
    readers: dict[str, Callable[[Any], str]] = {"before": old_read, "after": read_image}
    rows = []
    for case, image, sentences in pages:
        row: dict[str, Any] = {"case": case}
        for when, read in readers.items():
            log(f"docs_ocr: {case}, {when} ...")
            seconds, text = best_of(partial(read, image), 1 if quick else 2)
            row[when] = {**order_figures(text, sentences), "pages_s": 1 / seconds}
        rows.append(row)
    return {"cases": rows, "pages": len(rows)}


def run(quick: bool) -> None:
    print(json.dumps(measure(quick), indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main(run, __doc__)
