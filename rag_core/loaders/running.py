"""Running headers and footers: the lines a PDF repeats at the top or bottom of most pages (a manual's title, a
policy's "Untitled 3", page numbers in any style: "3", "- 3 -", "Page 3 of 10", "第 3 页") and a deck repeats on
most slides (a conference's name). Left in, they sit in half the chunks of a document, match every query about the
document's title and crowd the text an answer is read from; so they are left out of the text, and the document's
notes say which lines were removed and from how many pages (`Document.note_phrases`, shown by `chunk`, the ingest
report and the chunk preview).

The rule, kept narrow so body text never goes:

- only documents whose places are all pages or all slides, with at least `MIN_PAGES` of them;
- only the first and last `EDGE_LINES` non-blank lines of a page (a PDF often draws its footer before its body, so
  both ends are looked at for both kinds); not a Markdown heading (`# ...`: a slide's title, an outline heading),
  a table row (`| ...`), a line longer than `MAX_CHARS`, or a line without a letter, digit or CJK character;
- a line counts with its digits (and a bare roman page number) normalised and its whitespace and case ignored, so
  "Page 3 of 10" and "Page 4 of 10" are one line; it is running when it is at the edge of at least `SHARE` of
  the pages and at least `MIN_PAGES` pages (a real heading that repeats on 2 pages of 40 stays), and not also in
  the middle of pages (one page in `INSIDE`): that is body text made from a template ("Step N: check the logs");
- a page whose every line is running (a title page that is only the title) is left whole: its place stays.

The places' offsets are recomputed as the pages are rebuilt, so chunks still cite their pages.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

from ..phrases import Phrase
from ..records import PAGE, SLIDE
from .extracted import Extracted

EDGE_LINES = 3  # the first and last lines of a page a running line may be
SHARE = 0.5  # of the pages a line must be at the edge of
MIN_PAGES = 3  # and at least so many
MAX_CHARS = 120  # a longer line is body text
INSIDE = 5  # a line is body text when it is in the middle of a page for every INSIDE pages it is at the edge of
SHOWN = 5  # running lines named in the note

_DIGITS = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")
# "iv", "- iv -": a front-matter page number
_ROMAN = re.compile(r"[-–—·.|\s]*(?=[ivx])x{0,3}(?:ix|iv|v?i{0,3})[-–—·.|\s]*")
RUNNING_FIELD = "running_lines"  # the document's metadata key naming what was left out (its labels: `tag DOC`)
_NOT_RUNNING = re.compile(r" {0,3}(?:#{1,6}(?:\s|$)|\|)")  # a heading or a table row


def drop_running(extracted: Extracted) -> Extracted:
    """`extracted` without its running lines and with a note naming them; unchanged when it has none (or no pages)."""
    places = extracted.places
    units = {p.unit for p in places}
    if len(places) < MIN_PAGES or units not in ({PAGE}, {SLIDE}):
        return extracted
    text = extracted.text
    bounds = [p.offset for p in places] + [len(text)]
    pages = [text[bounds[i]:bounds[i + 1]] for i in range(len(places))]
    edges = [_edges(page) for page in pages]
    seen = Counter(key for page in edges for key in {key for _, key, _ in page})
    least = max(MIN_PAGES, SHARE * len(pages))
    running = {key for key, n in seen.items() if n >= least}
    if running:  # a line also in the middle of pages is body text that repeats ("Step N: ..."), not a running line
        inside = Counter(key for page in pages for key in _inside(page) & running)
        running = {key for key in running if inside[key] * INSIDE <= seen[key]}
    running -= _with_their_context(pages, edges, running)
    if not running:
        return extracted
    parts, new_places = [text[:bounds[0]]], []
    size = len(parts[0])
    removed: dict[str, list[str]] = {}  # key -> the lines removed, as read
    pages_cut = 0
    for place, page, edge in zip(places, pages, edges, strict=True):
        cut = {n: line for n, key, line in edge if key in running}
        kept = _without(page, cut) if cut else page
        if kept is not page:
            pages_cut += 1
            for line in cut.values():
                removed.setdefault(_key(line), []).append(line)
        new_places.append(replace(place, offset=size))
        parts.append(kept)
        size += len(kept)
    if not removed:
        return extracted
    unit = "slides" if units == {SLIDE} else "pages"
    lines = [f"“{_shown(removed[key])}”" for key in sorted(removed, key=lambda k: -len(removed[k]))]
    note = Phrase(f"load.running_lines_{unit}", {"lines": lines[:SHOWN] + ([f"+{len(lines) - SHOWN}"]
                                                                            if len(lines) > SHOWN else []),
                                                 "pages": pages_cut, "total": len(places)})
    found = tuple(_shown(removed[key]) for key in sorted(removed, key=lambda k: -len(removed[k])))
    return replace(extracted, text="".join(parts), places=tuple(new_places), notes=(*extracted.notes, note),
                   fields={**extracted.fields, RUNNING_FIELD: found})


def _edges(page: str) -> list[tuple[int, str, str]]:
    """(line index, key, line) of the page's first and last `EDGE_LINES` non-blank lines that may be running."""
    lines = page.split("\n")
    filled = [n for n, line in enumerate(lines) if line.strip()]
    out = []
    for n in sorted(set(filled[:EDGE_LINES] + filled[-EDGE_LINES:])):
        line = lines[n]
        if len(line) > MAX_CHARS or _NOT_RUNNING.match(line) or not any(c.isalnum() for c in line):
            continue
        out.append((n, _key(line), line))
    return out


def _with_their_context(pages: list[str], edges: list[list[tuple[int, str, str]]], running: set[str]) -> set[str]:
    """The candidates that are body text repeated with the text next to them: a line whose neighbour towards the
    page's body (the next line below a top line, the one above a bottom line, other candidates skipped) is the same
    on most of the pages it is on. A running header is followed by each page's own text; a line of pages that repeat
    (a deck's build-up slides, a document that repeats a passage) is followed by the same line each time."""
    beside: dict[str, Counter[str]] = {key: Counter() for key in running}
    for page, edge in zip(pages, edges, strict=True):
        lines = page.split("\n")
        filled = [n for n, line in enumerate(lines) if line.strip()]
        middle = filled[len(filled) // 2] if filled else 0
        for n, key, _ in edge:
            if key not in running:
                continue
            order = [m for m in filled if m > n] if n <= middle else [m for m in reversed(filled) if m < n]
            near = next((_key(lines[m]) for m in order if _key(lines[m]) not in running), None)
            if near is not None:
                beside[key][near] += 1
    return {key for key, near in beside.items() if near and near.most_common(1)[0][1] * 2 > sum(near.values())}


def _inside(page: str) -> set[str]:
    """The keys of the page's lines between its first and last `EDGE_LINES` non-blank lines."""
    filled = [line for line in page.split("\n") if line.strip()]
    return {_key(line) for line in filled[EDGE_LINES:-EDGE_LINES] if len(line) <= MAX_CHARS}


def _key(line: str) -> str:
    """What a line is compared by: its digits as 0, no whitespace, case folded; a bare roman number is 0."""
    folded = "".join(line.casefold().split())
    if _ROMAN.fullmatch(folded):
        return "0"
    return _DIGITS.sub("0", folded)


def _without(page: str, cut: dict[int, str]) -> str:
    """The page without the lines at `cut`, its separator to the next page kept; the page itself when nothing else
    would be left."""
    body = page.rstrip("\n")
    tail = page[len(body):]
    lines = body.split("\n")
    kept = "\n".join(line for n, line in enumerate(lines) if n not in cut).strip("\n")
    if not kept.strip():
        return page
    return kept + tail


def _shown(lines: list[str]) -> str:
    """A running line as the note names it: the numbers that change from page to page as N ("Page N of 10")."""
    first = _SPACE.sub(" ", lines[0].strip())
    numbers = [_DIGITS.findall(line) for line in lines]
    if _ROMAN.fullmatch(first.casefold()) and len(lines) > 1:
        return "N"
    count = iter(range(len(numbers[0])))

    def number(match: re.Match[str]) -> str:
        i = next(count)
        same = all(len(found) > i and found[i] == numbers[0][i] for found in numbers)
        return match.group(0) if same else "N"

    return _DIGITS.sub(number, first)
