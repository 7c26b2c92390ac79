"""Text -> chunks with exact offsets: heading-aware, paragraph-greedy, sentence-aligned overlap.

This is the seed's `DocumentChunkService` (split by Markdown headings, fill chunks by paragraphs,
carry an overlap that starts at a sentence boundary) with its defects fixed:

* headings inside fenced code (``` or ~~~) are code, not section breaks;
* a heading with no body of its own does not become a tiny chunk, it joins the next section;
* no chunk ever exceeds `max_size`, overlap included (oversized paragraphs are split at sentence
  ends, then whitespace, then hard);
* the overlap is never silently empty (the seed's was, whenever a chunk ended in 。);
* every chunk is an exact slice of the document: `text[c.start:c.end] == c.text`.

Decisions a caller can rely on:

* Sections. A heading is one line: up to 3 spaces, 1-6 `#`, whitespace, non-empty text (an optional
  closing `#` run is dropped). `#comment`, lines inside fences and 4-space-indented lines are not
  headings. Setext (underlined) headings are not recognised. A section runs from its heading line to
  the next heading line. Runs of heading-only sections are merged into the section that follows
  them: the chunk text starts at the first of those heading lines, and `heading_path` / `title` are
  those of the last heading (the one the body sits under). A heading-only run at the very end of the
  document has nothing to join and becomes its own chunk. Text before the first heading is a section
  with `heading_path == ()` and `title == ""`.
* Heading text in chunks. The first chunk of a section starts at its heading line(s), so the heading
  words are embedded with the section's opening text; a chunk never ends inside that heading block
  while body text fits (no heading-only chunks). Later chunks of the same section do not repeat the
  heading line; they carry it in `title` / `heading_path`.
* Filling. Inside a section a chunk ends at the furthest paragraph break (blank line) that fits, so
  paragraphs are packed greedily and a paragraph that does not fit starts the next chunk. Only when
  no paragraph break fits (a paragraph longer than what is left) does it end at the furthest
  sentence end: after 。？！ anywhere; after .?! followed by whitespace or the end of the text (not
  after an ordered-list marker like "4."); closing quotes/brackets stay with their sentence; and
  before every newline. Then at the furthest whitespace; then hard at `max_size`. Chunks start at a
  non-whitespace character and end after one (offsets stay exact).
* Overlap. The next chunk of the same section starts inside the window of the last `overlap`
  characters of the previous chunk: at the earliest sentence start in that window (so the overlap is
  as long as possible while starting at a sentence; in particular it starts at a sentence whenever
  one starts in the latter half of the window, the seed's rule); failing that, at the earliest word
  start in the first half of the window; failing that, at the window start. The seed used the *last*
  sentence end of the window, which made overlaps short, and empty when a chunk ended in 。. The
  overlap is counted inside `max_size`: the new text after it shrinks instead. The window never
  reaches back to the previous chunk's start (each chunk starts later and ends later than the one
  before) and never crosses sections.
* `boundary`: "first" (chunk 0), "section" (first chunk of a later section, never overlapped),
  "overlap" (`overlap_chars > 0`), or "no-overlap: <reason>" with one of the `NO_OVERLAP_*` reasons.
* Records (`records=True`, spreadsheet and CSV rows, one paragraph each): chunks hold whole records packed
  greedily and never overlap (an overlap would start inside a row, or repeat rows as duplicates), so a chunk
  starts and ends at a row unless that row alone is longer than `max_size`.
* Places (`chunk_document`): each chunk gets the `Location` of the pages, slides or rows its [start, end)
  spans, from the document's places (the place holding `start` through the last one starting before `end`).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace
from statistics import fmean
from typing import Any

from rag_core.errors import ChunkingError
from rag_core.records import ROW, Chunk, Document, Location, Place

DEFAULT_MAX_SIZE = 800
DEFAULT_OVERLAP = 100

BOUNDARY_FIRST = "first"
BOUNDARY_SECTION = "section"
BOUNDARY_OVERLAP = "overlap"
NO_OVERLAP_PREFIX = "no-overlap: "
# Reasons a boundary inside one section carries no overlap (the text after NO_OVERLAP_PREFIX).
NO_OVERLAP_DISABLED = "overlap is 0"
NO_OVERLAP_SHORT_PREVIOUS = "previous chunk is a single character"
NO_OVERLAP_WHITESPACE_GAP = "whitespace gap leaves no room"
NO_OVERLAP_RECORDS = "rows are kept whole"

# `[^\S\n]` is whitespace other than a newline: a stray CR or tab counts as blank, so text that
# escaped LF normalisation still chunks sensibly (offsets stay exact either way).
_HEADING = re.compile(r" {0,3}(#{1,6})[^\S\n]+(.*)")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_BLANK_LINES = re.compile(r"\n(?:[^\S\n]*\n)+")
_CLOSERS = "”’」』）)\\]\"'»"
# A sentence ends after CJK punctuation anywhere, after Latin punctuation only before whitespace or
# the end (so "3.14" and "e.g.x" do not split), and before every newline (lines in lists, code and
# tables are natural units). The zero-width newline alternative yields the newline's position.
# Possessive quantifiers and the lookbehind keep a long run like "......x" linear instead of
# re-scanning the run from every dot.
_SENTENCE_END = re.compile(
    rf"[。？！]++[{_CLOSERS}]*+|(?<![.?!])[.?!]++[{_CLOSERS}]*+(?=\s|\Z)|(?=\n)"
)
# "4. Restart the pod" is a list item, not a sentence ending in "4.".
_LIST_MARKER_END = re.compile(r"^[^\S\n]*\d{1,9}[.)]\s", re.MULTILINE)
_WHITESPACE_RUN = re.compile(r"\s+")
_NON_WS = re.compile(r"\S")


@dataclass(frozen=True)
class _Heading:
    start: int  # offset of the heading line's first `#`
    line_end: int  # offset just past the heading line's text (at its newline or the end)
    level: int
    text: str


@dataclass(frozen=True)
class _Section:
    start: int  # first character of the section (its first heading line, or the preamble's text)
    body: int  # first non-whitespace character after the section's heading lines
    end: int  # just past the section's last non-whitespace character
    heading_path: tuple[str, ...]


@dataclass(frozen=True)
class _Breaks:
    """Where chunks may end or start, precomputed once per document (sorted offsets)."""

    paragraph_ends: list[int]  # first newline of each blank-line separator
    sentence_ends: list[int]  # just past a sentence (or at a newline)
    whitespace: list[int]  # first character of each whitespace run
    sentence_starts: list[int]  # first non-whitespace character after a sentence end
    word_starts: list[int]  # first character after each whitespace run


def chunk_text(text: str, max_size: int = DEFAULT_MAX_SIZE, overlap: int = DEFAULT_OVERLAP, *,
               records: bool = False) -> list[Chunk]:
    """Split `text` into chunks of at most `max_size` characters (see the module docstring); `records`: its
    paragraphs are rows, kept whole and never overlapped."""
    _check_params(max_size, overlap)
    if not text or text.isspace():
        return []
    sections = _split_sections(text)
    breaks = _find_breaks(text)
    chunks: list[Chunk] = []
    for section in sections:
        _chunk_section(text, section, breaks, max_size, -1 if records else overlap, chunks)
    return chunks


def chunk_document(doc: Document, max_size: int = DEFAULT_MAX_SIZE, overlap: int = DEFAULT_OVERLAP) -> list[Chunk]:
    """`chunk_text` of the document's text, rows kept whole, each chunk with the location it spans."""
    records = bool(doc.places) and doc.places[0].unit == ROW
    chunks = chunk_text(doc.text, max_size, overlap, records=records)
    return locate(chunks, doc.places) if doc.places else chunks


def locate(chunks: Sequence[Chunk], places: Sequence[Place]) -> list[Chunk]:
    """`chunks` with the location each spans: the place holding its start through the last place that starts
    before its end (a chunk before the first place has none)."""
    offsets = [p.offset for p in places]
    out: list[Chunk] = []
    for chunk in chunks:
        first = bisect_right(offsets, chunk.start) - 1
        last = bisect_left(offsets, chunk.end) - 1
        if last < 0:
            out.append(chunk)
            continue
        first = max(first, 0)
        spanned = places[first:last + 1]
        head = spanned[0]
        sheet = head.sheet if all(p.sheet == head.sheet for p in spanned) else ""
        location = Location(head.unit, min(p.number for p in spanned), max(p.number for p in spanned), sheet,
                            any(p.ocr for p in spanned))
        out.append(replace(chunk, location=location, search_text=spanned[-1].question))  # a Q&A pair: its question
    return out


def overlap_summary(chunks: Sequence[Chunk]) -> dict[str, Any]:
    """Counts for the "effective overlap" panel: what happened at each boundary between chunks."""
    overlaps: list[int] = []
    section_starts = 0
    reasons: dict[str, int] = {}
    for chunk in chunks[1:]:
        if chunk.boundary == BOUNDARY_OVERLAP:
            overlaps.append(chunk.overlap_chars)
        elif chunk.boundary == BOUNDARY_SECTION:
            section_starts += 1
        else:
            reason = chunk.boundary.removeprefix(NO_OVERLAP_PREFIX) or "unknown"
            reasons[reason] = reasons.get(reason, 0) + 1
    return {
        "chunks": len(chunks),
        "boundaries": max(0, len(chunks) - 1),
        "with_overlap": len(overlaps),
        "section_starts": section_starts,
        "without_overlap": sum(reasons.values()),
        "no_overlap_reasons": dict(sorted(reasons.items())),
        "mean_overlap_chars": fmean(overlaps) if overlaps else 0.0,
        "min_overlap_chars": min(overlaps, default=0),
        "max_overlap_chars": max(overlaps, default=0),
    }


def chunks_to_json(chunks: Sequence[Chunk]) -> list[dict[str, Any]]:
    """Plain dicts (JSON-ready) with every field; `heading_path` as a list plus its " > " text."""
    return [
        {
            "chunk_index": c.chunk_index,
            "text": c.text,
            "start": c.start,
            "end": c.end,
            "title": c.title,
            "heading_path": list(c.heading_path),
            "heading_path_text": c.heading_path_text,
            "overlap_chars": c.overlap_chars,
            "boundary": c.boundary,
            "location": c.location.to_dict() if c.location else None,
        }
        for c in chunks
    ]


def _check_params(max_size: int, overlap: int) -> None:
    for name, value in (("max_size", max_size), ("overlap", overlap)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ChunkingError(f"Chunk {name} must be a whole number of characters, got {value!r}.")
    if max_size <= 0:
        raise ChunkingError(f"Chunk size must be at least 1 character, got {max_size}. Try 800.")
    if overlap < 0:
        raise ChunkingError(f"Chunk overlap cannot be negative, got {overlap}. Use 0 for no overlap.")
    if overlap >= max_size:
        raise ChunkingError(
            f"Chunk overlap ({overlap}) must be smaller than the chunk size ({max_size}), "
            "otherwise a chunk has no room for new text. Try an overlap around 1/8 of the size."
        )


# --- sections ---------------------------------------------------------------------------------


def _find_headings(text: str) -> list[_Heading]:
    headings: list[_Heading] = []
    fence_char = ""  # "`" or "~" while inside a fenced code block
    fence_len = 0
    pos = 0
    # Split on "\n" only: str.splitlines() also breaks on \r, \x0b, \u2028 ... and would skew offsets.
    for line in text.split("\n"):
        line_start = pos
        pos += len(line) + 1
        stripped = line.lstrip(" ")
        if len(line) - len(stripped) > 3 or not stripped:
            continue
        first = stripped[0]
        if fence_char:
            run = len(stripped) - len(stripped.lstrip(fence_char))
            if first == fence_char and run >= fence_len and not stripped[run:].strip():
                fence_char = ""
            continue
        if first in "`~":
            fence = _FENCE_OPEN.match(line)
            # A backtick fence's info string cannot contain backticks (CommonMark): "```x```" is code span.
            if fence and not (first == "`" and "`" in fence.group(2)):
                fence_char, fence_len = first, len(fence.group(1))
            continue
        if first == "#":
            match = _HEADING.match(line)
            if match:
                title = _heading_title(match.group(2))
                if title:
                    indent = len(line) - len(stripped)  # chunks start at non-whitespace
                    headings.append(_Heading(line_start + indent, line_start + len(line), len(match.group(1)), title))
    return headings


def _heading_title(raw: str) -> str:
    """Heading text without the optional closing `#` run ("## Title ##" -> "Title"; "C#" stays)."""
    title = raw.strip()
    bare = title.rstrip("#")
    if bare != title and (not bare or bare[-1] in " \t"):
        title = bare.rstrip()
    return title


def _split_sections(text: str) -> list[_Section]:
    headings = _find_headings(text)
    sections: list[_Section] = []
    first_heading = headings[0].start if headings else len(text)
    preamble = _NON_WS.search(text, 0, first_heading)
    if preamble:
        start = preamble.start()
        sections.append(_Section(start, start, _rstrip(text, first_heading, start), ()))

    stack: list[tuple[int, str]] = []  # (level, text) of the headings enclosing the current one
    pending_start = -1  # first heading line of a run of heading-only sections waiting for a body
    for i, heading in enumerate(headings):
        while stack and stack[-1][0] >= heading.level:
            stack.pop()
        stack.append((heading.level, heading.text))
        path = tuple(t for _, t in stack)
        next_start = headings[i + 1].start if i + 1 < len(headings) else len(text)
        body = _NON_WS.search(text, heading.line_end, next_start)
        start = heading.start if pending_start < 0 else pending_start
        if body is None and i + 1 < len(headings):
            pending_start = start
            continue
        pending_start = -1
        body_start = body.start() if body else start
        sections.append(_Section(start, body_start, _rstrip(text, next_start, start), path))
    return sections


# --- breaks -----------------------------------------------------------------------------------


def _find_breaks(text: str) -> _Breaks:
    whitespace: list[int] = []
    word_starts: list[int] = []
    for run in _WHITESPACE_RUN.finditer(text):
        whitespace.append(run.start())
        word_starts.append(run.end())
    markers = {m.end() - 1 for m in _LIST_MARKER_END.finditer(text)}
    sentence_ends = [m.end() for m in _SENTENCE_END.finditer(text) if m.end() not in markers]
    sentence_starts: list[int] = []
    last = -1
    for end in [0, *sentence_ends]:
        # Ends inside the whitespace already skipped lead to the same start; searching again from
        # each of them would be quadratic on a long run of newlines.
        if end <= last:
            continue
        nxt = _NON_WS.search(text, end)
        if nxt is None:
            break
        last = nxt.start()
        sentence_starts.append(last)
    return _Breaks(
        paragraph_ends=[m.start() for m in _BLANK_LINES.finditer(text)],
        sentence_ends=sentence_ends,
        whitespace=whitespace,
        sentence_starts=sentence_starts,
        word_starts=word_starts,
    )


def _last_in(offsets: list[int], low: int, high: int) -> int:
    """The largest offset in `offsets` with low < offset <= high, or -1."""
    i = bisect_right(offsets, high) - 1
    return offsets[i] if i >= 0 and offsets[i] > low else -1


def _first_in(offsets: list[int], low: int, high: int) -> int:
    """The smallest offset in `offsets` with low <= offset < high, or -1."""
    i = bisect_left(offsets, low)
    return offsets[i] if i < len(offsets) and offsets[i] < high else -1


def _rstrip(text: str, end: int, floor: int) -> int:
    while end > floor and text[end - 1].isspace():
        end -= 1
    return end


def _next_non_ws(text: str, pos: int) -> int:
    match = _NON_WS.search(text, pos)
    return match.start() if match else len(text)


# --- chunks -----------------------------------------------------------------------------------


def _chunk_section(
    text: str, section: _Section, breaks: _Breaks, max_size: int, overlap: int, out: list[Chunk]
) -> None:
    title = section.heading_path[-1] if section.heading_path else ""
    start = section.start
    # A chunk must end after `must_pass`: past the heading block for a section's first chunk (so no
    # heading-only chunk), past the first new character for later ones (so every chunk makes progress).
    must_pass = section.body
    boundary = BOUNDARY_FIRST if not out else BOUNDARY_SECTION
    prev_end = out[-1].end if out else 0
    while True:
        limit = start + max_size
        if section.end <= limit:
            end = section.end
        else:
            if must_pass >= limit:  # the heading block alone is longer than a chunk: split it too
                must_pass = start
            end = _rstrip(text, _best_end(breaks, must_pass, limit), must_pass + 1)
        out.append(
            Chunk(
                chunk_index=len(out),
                text=text[start:end],
                start=start,
                end=end,
                title=title,
                heading_path=section.heading_path,
                overlap_chars=max(0, prev_end - start),
                boundary=boundary,
            )
        )
        if end >= section.end:
            return
        new_text = _next_non_ws(text, end)
        overlap_start, reason = _overlap_start(text, breaks, start, end, new_text, overlap, max_size)
        if overlap_start < 0:
            start, boundary = new_text, NO_OVERLAP_PREFIX + reason
        else:
            start, boundary = overlap_start, BOUNDARY_OVERLAP
        prev_end, must_pass = end, new_text


def _best_end(breaks: _Breaks, low: int, limit: int) -> int:
    """Where a chunk whose new text starts at `low` should end, at most at `limit`."""
    for offsets in (breaks.paragraph_ends, breaks.sentence_ends, breaks.whitespace):
        end = _last_in(offsets, low, limit)
        if end >= 0:
            return end
    return limit


def _overlap_start(
    text: str, breaks: _Breaks, prev_start: int, prev_end: int, new_text: int, overlap: int, max_size: int
) -> tuple[int, str]:
    """Where the next chunk starts inside the previous one, or (-1, reason) when it cannot (overlap -1: records)."""
    if overlap < 0:
        return -1, NO_OVERLAP_RECORDS
    if overlap == 0:
        return -1, NO_OVERLAP_DISABLED
    room = new_text + 1 - max_size  # the chunk must still reach one new character within max_size
    low = max(prev_end - overlap, prev_start + 1, room)
    if low >= prev_end:
        return -1, NO_OVERLAP_WHITESPACE_GAP if room >= prev_end else NO_OVERLAP_SHORT_PREVIOUS
    sentence = _first_in(breaks.sentence_starts, low, prev_end)
    if sentence >= 0:
        return sentence, ""
    # No sentence starts in the window: a word start still avoids cutting a word, but only if it
    # keeps at least half of the window (CJK text has few spaces; a late one would gut the overlap).
    word = _first_in(breaks.word_starts, low, low + (prev_end - low) // 2 + 1)
    if word >= 0:
        return word, ""
    # text[prev_end - 1] is not whitespace, so this lands inside the window.
    return _next_non_ws(text, low), ""
