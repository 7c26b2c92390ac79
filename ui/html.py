"""Pure HTML builders: the chunked document with overlap highlighting, and chunk cards.

Every piece of document text goes through `html.escape`, so a document containing `<script>` or
`<img onerror=...>` is shown as text and never runs. Styles are inline so each fragment stands alone. The words
around the text are in the user's language (ui/i18n.py); class names and data attributes stay codes.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_core import chunking
from rag_core.records import Chunk

from .i18n import t, tn
from .reasons import location_label

# Two alternating chunk backgrounds, the overlap colour (shared by two chunks) and the marker colour.
CHUNK_BG = ("#e3effd", "#e6f4e3")
OVERLAP_BG = "#ffd166"
OVERLAP_BORDER = "#c98a00"
MARKER = "#35506b"

_DOC_STYLE = ("white-space:pre-wrap;word-break:break-word;line-height:1.65;font-size:0.92rem;"
              "padding:0.75rem 1rem;border:1px solid #d5dbe3;border-radius:0.5rem;background:#fff;"
              "max-height:640px;overflow-y:auto;font-family:ui-sans-serif,system-ui,sans-serif")
_BADGE_STYLE = (f"display:inline-block;margin:0 2px 0 1px;padding:0 5px;border-radius:0.6rem;background:{MARKER};"
                "color:#fff;font-size:0.7rem;font-weight:600;line-height:1.35;vertical-align:1px;"
                "font-family:ui-monospace,monospace;user-select:none")
_END_STYLE = (
    f"display:inline-block;width:0;border-right:2px solid {MARKER};height:1.1em;vertical-align:-3px;margin:0 1px"
)


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def source_link_html(url: str) -> str:
    """Where a synced source's document is opened (a hit's `source_url`): a link that opens in a new tab for a web
    address, the address as text for another (a file:// URL a browser will not open from a page, a Git file
    named `repo@commit:path`); "" without one."""
    if not url:
        return ""
    if url.startswith(("http://", "https://")):
        label = t("at the source")
        return (f'<a class="source-link" href="{esc(url)}" target="_blank" rel="noopener noreferrer" '
                f'title="{esc(url)}">↗ {esc(label)}</a>')
    return f'<span class="source-link" style="color:#777;word-break:break-all">{esc(url)}</span>'


MATCHED_BG = "#fff1a8"  # a matched chunk inside its evidence block (ui/blocks.py)
MATCHED_BORDER = "#b08900"


def marked_html(text: str, spans: Sequence[Sequence[int]], *, title: str = "", css_class: str = "matched") -> str:
    """`text` escaped, each [start, end) of `spans` inside a `<mark>` (spans that overlap or touch are one mark);
    `title`: the marks' tooltip."""
    merged: list[list[int]] = []
    for start, end in sorted((max(0, int(a)), min(len(text), int(b))) for a, b in spans):
        if start >= end:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    tip = f' title="{esc(title)}"' if title else ""
    parts, at = [], 0
    for start, end in merged:
        parts += [esc(text[at:start]),
                  f'<mark class="{esc(css_class)}"{tip} style="background:{MATCHED_BG};border-bottom:2px solid '
                  f'{MATCHED_BORDER};padding:0;color:inherit">{esc(text[start:end])}</mark>']
        at = end
    parts.append(esc(text[at:]))
    return "".join(parts)


@dataclass(frozen=True)
class ChunkView:
    """What a chunk card shows; built from a chunking `Chunk` or from a cited evidence block."""

    index: int
    text: str
    start: int | None = None
    end: int | None = None
    heading_path: str = ""
    overlap_chars: int | None = None  # None: not known (a cited chunk)
    boundary: str = ""
    doc_id: str = ""
    score: float | None = None
    location: str = ""  # where in the document: "p. 12", "slide 3", "sheet FAQ, row 7" (Location.label)
    searched_by: str = ""  # a Q&A pair's question, what it is searched by instead of its text (Chunk.search_text)

    @property
    def length(self) -> int:
        return len(self.text)

    @classmethod
    def of(cls, chunk: Chunk, doc_id: str = "") -> ChunkView:
        location = location_label(chunk.location)  # in the user's language: "p. 12", "第 12 页"
        return cls(chunk.chunk_index, chunk.text, chunk.start, chunk.end, chunk.heading_path_text,
                   chunk.overlap_chars, chunk.boundary, doc_id, location=location, searched_by=chunk.search_text)


def _segments(text_len: int, chunks: Sequence[Chunk]) -> list[tuple[int, int, list[int]]]:
    """Cut [0, text_len) at every chunk start and end: (start, end, indexes of the chunks covering it)."""
    points = sorted({0, text_len, *(c.start for c in chunks), *(c.end for c in chunks)})
    out = []
    ordered = sorted(range(len(chunks)), key=lambda i: chunks[i].start)
    active: list[int] = []
    nxt = 0
    for a, b in zip(points, points[1:]):
        if a >= text_len:
            break
        while nxt < len(ordered) and chunks[ordered[nxt]].start <= a:
            active.append(ordered[nxt])
            nxt += 1
        active = [i for i in active if chunks[i].end > a]
        out.append((a, b, sorted(active)))
    return out


def document_html(text: str, chunks: Sequence[Chunk], *, max_chars: int | None = None) -> str:
    """The document with chunk boundaries (a numbered badge where a chunk starts, a bar where it
    ends), alternating chunk backgrounds and every overlap region highlighted.

    `max_chars` renders only the beginning of a long document (a note says how much is shown).
    """
    shown_len = len(text) if max_chars is None else min(len(text), max_chars)
    starts: dict[int, list[int]] = {}
    ends: dict[int, list[int]] = {}
    for i, c in enumerate(chunks):
        starts.setdefault(c.start, []).append(i)
        ends.setdefault(c.end, []).append(i)
    parts: list[str] = [f'<div class="chunked-doc" style="{_DOC_STYLE}">']
    for a, b, covering in _segments(shown_len, chunks):
        for i in ends.get(a, []):
            parts.append(_chunk_end(chunks[i].chunk_index))
        for i in starts.get(a, []):
            c = chunks[i]
            title = t("chunk {index} [{start}:{end}]", index=c.chunk_index, start=c.start, end=c.end)
            parts.append(f'<span class="chunk-start" title="{esc(title)}" style="{_BADGE_STYLE}">'
                         f'{c.chunk_index}</span>')
        piece = esc(text[a:b])
        if len(covering) >= 2:
            names = t(" and ").join(str(chunks[i].chunk_index) for i in covering)
            title = t("overlap: in chunks {names} ({n} chars)", names=names, n=b - a)
            parts.append(f'<mark class="overlap" title="{esc(title)}" '
                         f'style="background:{OVERLAP_BG};border-bottom:2px solid {OVERLAP_BORDER};'
                         f'padding:0;color:inherit">{piece}</mark>')
        elif covering:
            bg = CHUNK_BG[chunks[covering[0]].chunk_index % 2]
            parts.append(f'<span class="chunk" style="background:{bg}">{piece}</span>')
        else:
            parts.append(f'<span class="gap">{piece}</span>')
    for i in ends.get(shown_len, []):
        parts.append(_chunk_end(chunks[i].chunk_index))
    if shown_len < len(text):
        parts.append(f'<div class="truncated" style="margin-top:0.75rem;color:#6b7280;font-style:italic">'
                     f'{esc(_showing(shown_len, len(text)))}</div>')
    parts.append("</div>")
    return "".join(parts)


def _chunk_end(index: int) -> str:
    title = esc(t("end of chunk {index}", index=index))
    return f'<span class="chunk-end" title="{title}" style="{_END_STYLE}"></span>'


def _showing(shown: int, total: int) -> str:
    return t("… showing the first {shown:,} of {total:,} characters.", shown=shown, total=total)


def legend_html() -> str:
    def swatch(bg: str, label: str, extra: str = "") -> str:
        return (f'<span style="display:inline-flex;align-items:center;gap:4px;margin-right:14px">'
                f'<span style="display:inline-block;width:14px;height:14px;border-radius:3px;background:{bg};{extra}">'
                f'</span>{esc(label)}</span>')

    return ('<div style="font-size:0.85rem;color:#374151;margin:0.25rem 0 0.5rem">'
            + swatch(CHUNK_BG[0], t("even chunk")) + swatch(CHUNK_BG[1], t("odd chunk"))
            + swatch(OVERLAP_BG, t("overlap (in two chunks)"), f"border-bottom:2px solid {OVERLAP_BORDER}")
            + f'<span style="{_BADGE_STYLE}">n</span> ' + esc(t("chunk n starts"))
            + f' <span style="{_END_STYLE}"></span> ' + esc(t("a chunk ends")) + '</div>')


def no_overlap_reason(reason: str) -> str:
    """One of rag_core.chunking's NO_OVERLAP_* reasons (fixed texts, used as codes) in words."""
    return {chunking.NO_OVERLAP_DISABLED: t("overlap is 0"),
            chunking.NO_OVERLAP_SHORT_PREVIOUS: t("previous chunk is a single character"),
            chunking.NO_OVERLAP_WHITESPACE_GAP: t("whitespace gap leaves no room"),
            chunking.NO_OVERLAP_RECORDS: t("rows are kept whole")}.get(reason, reason)


def boundary_label(boundary: str) -> str:
    if boundary.startswith(chunking.NO_OVERLAP_PREFIX):
        return t("no overlap: {reason}", reason=no_overlap_reason(boundary.removeprefix(chunking.NO_OVERLAP_PREFIX)))
    return {chunking.BOUNDARY_FIRST: t("first chunk"),
            chunking.BOUNDARY_SECTION: t("new section (overlap never crosses sections)"),
            chunking.BOUNDARY_OVERLAP: t("overlap")}.get(boundary, boundary)


def chunk_card_html(view: ChunkView, *, alt: bool = False) -> str:
    """One chunk: index, heading path, offsets, length, overlap and boundary; the overlap prefix of
    its text highlighted."""
    facts = [tn("{n:,} char", "{n:,} chars", view.length)]
    if view.start is not None and view.end is not None:
        facts.insert(0, f"[{view.start:,}:{view.end:,}]")
    if view.overlap_chars is not None:
        facts.append(t("overlap {n}", n=view.overlap_chars))
    if view.boundary:
        facts.append(boundary_label(view.boundary))
    if view.score is not None:
        facts.append(t("score {score:.4f}", score=view.score))
    if view.searched_by:  # a Q&A pair: embedded and BM25-indexed by its question alone, returned whole
        facts.append(t("searched by its question"))
    title = f"#{view.index}"
    if view.doc_id:
        title = f"{view.doc_id} #{view.index}"
    if view.location:  # as a citation names it: "manual.pdf #3 p. 12"
        title = f"{title} {view.location}"
    no_heading = '<span style="color:#9ca3af">' + esc(t("(no heading)")) + '</span>'
    head = esc(view.heading_path) if view.heading_path else no_heading
    overlap = min(view.overlap_chars or 0, len(view.text))
    body = ""
    if overlap:
        body += (f'<mark class="overlap" style="background:{OVERLAP_BG};border-bottom:2px solid {OVERLAP_BORDER};'
                 f'padding:0;color:inherit">{esc(view.text[:overlap])}</mark>')
    body += esc(view.text[overlap:])
    bg = CHUNK_BG[1] if alt else CHUNK_BG[0]
    return (f'<div class="chunk-card" style="border:1px solid #d5dbe3;border-left:4px solid {MARKER};'
            f'border-radius:0.5rem;margin:0 0 0.6rem;background:#fff">'
            f'<div style="padding:0.35rem 0.75rem;background:{bg};border-radius:0.5rem 0.5rem 0 0;font-size:0.85rem">'
            f'<b style="font-family:ui-monospace,monospace">{esc(title)}</b> · {head}'
            f'<div style="color:#4b5563;font-size:0.78rem">{esc(" · ".join(facts))}</div></div>'
            f'<div style="white-space:pre-wrap;word-break:break-word;padding:0.5rem 0.75rem;font-size:0.88rem;'
            f'line-height:1.55;max-height:320px;overflow-y:auto">{body}</div></div>')


def overlap_summary_lines(summary: Mapping[str, Any]) -> list[str]:
    """The "effective overlap" panel as short sentences (markdown-safe: no document text)."""
    boundaries = summary["boundaries"]
    if not boundaries:
        return [t("One chunk: there is no boundary to overlap.")]
    if summary["with_overlap"]:
        lines = [t("**{with_overlap} of {boundaries}** boundaries carry overlap (mean {mean:.0f} chars, min {min}, max "
                   "{max}).", with_overlap=summary["with_overlap"], boundaries=boundaries,
                   mean=summary["mean_overlap_chars"], min=summary["min_overlap_chars"],
                   max=summary["max_overlap_chars"])]
    else:
        lines = [t("**{with_overlap} of {boundaries}** boundaries carry overlap.", with_overlap=summary["with_overlap"],
                   boundaries=boundaries)]
    if summary["section_starts"]:
        lines.append(t("{n} start a new heading section: overlap never crosses sections.", n=summary["section_starts"]))
    for reason, count in summary["no_overlap_reasons"].items():
        lines.append(t("{n} without overlap: {reason}.", n=count, reason=no_overlap_reason(reason)))
    return lines


DIFF_STYLE = {"added": ("#e6f4e3", "#2e7d32", "+"), "removed": ("#fdecea", "#c62828", "−")}


def changed_chunk_html(index: int, text: str, kind: str) -> str:
    """A chunk a re-upload added or removed, in green or red (text escaped)."""
    bg, border, sign = DIFF_STYLE[kind]
    return (f'<div class="chunk-{kind}" style="border:1px solid {border};border-left:4px solid {border};'
            f'border-radius:0.4rem;margin:0 0 0.5rem;background:{bg}">'
            f'<div style="padding:0.2rem 0.6rem;font-size:0.8rem;font-family:ui-monospace,monospace;color:{border}">'
            f'{sign} ' + esc(t("chunk #{index}", index=index)) + '</div>'
            f'<div style="white-space:pre-wrap;word-break:break-word;padding:0.3rem 0.6rem;'
            f'font-size:0.85rem;max-height:220px;overflow-y:auto">{esc(text)}</div></div>')


# The compare views' marks: found by both sides, or by one only (the side's own colour).
MARK_STYLE = {"both": ("#e6f4e3", "#2e7d32"), "only A": ("#e3effd", "#1e5aa8"), "only B": ("#fdf0e3", "#a04f00")}


def mark_label(mark: str, *, doc: bool = False) -> str:
    """A compare mark ("both", "only A", "only B": codes) in words; `doc`: the document-level mark."""
    if doc:
        return {"both": t("doc both"), "only A": t("doc only A"), "only B": t("doc only B")}.get(mark, mark)
    return {"both": t("both"), "only A": t("only A"), "only B": t("only B")}.get(mark, mark)


def mark_badge_html(mark: str, *, doc: bool = False) -> str:
    """A small badge "both" / "only A" / "only B" (`doc`: of the document level, "doc both" ...)."""
    bg, fg = MARK_STYLE[mark]
    return (f'<span class="mark-badge mark-{mark.replace(" ", "-")}" style="display:inline-block;padding:0 6px;'
            f'border-radius:0.6rem;background:{bg};color:{fg};border:1px solid {fg};font-size:0.72rem;'
            f'font-weight:600;white-space:nowrap">{esc(mark_label(mark, doc=doc))}</span>')


def compared_evidence_html(blocks: Sequence[Any], *, snippet_chars: int = 240) -> str:
    """One side of a lookup comparison (`rag_core.retrieval.compare.ComparedBlock`s): each evidence block with
    its chunk-level and document-level marks, what it was matched with on the other side, and its text."""
    if not blocks:
        return '<div class="compared-evidence" style="color:#6b7280">' + esc(t("No evidence.")) + '</div>'
    rows = []
    for x in blocks:
        bg, fg = MARK_STYLE[x.mark]
        # By text, name what it was matched with (a key alone says nothing when the chunking differs).
        other = t("≈ other side's {keys}", keys=", ".join(x.matches))
        matched = (f'<div style="padding:0 0.6rem;color:#4b5563;font-size:0.75rem">{esc(other)}</div>'
                   if x.matches and x.matches != (x.evidence_key,) else "")
        text = x.content if len(x.content) <= snippet_chars else x.content[:snippet_chars] + "…"
        rows.append(
            f'<div class="compared-block" data-mark="{esc(x.mark)}" style="border:1px solid #d5dbe3;'
            f'border-left:4px solid {fg};border-radius:0.4rem;margin:0 0 0.45rem;background:#fff">'
            f'<div style="padding:0.25rem 0.6rem;background:{bg};font-size:0.82rem;display:flex;gap:6px;'
            f'align-items:center;flex-wrap:wrap"><b>#{x.position}</b>{mark_badge_html(x.mark)}'
            f'{mark_badge_html(x.doc_mark, doc=True)}<code style="font-size:0.8rem">{esc(x.evidence_key)}</code>'
            f'<span style="margin-left:auto;color:#4b5563">{x.score:.4f}</span></div>{matched}'
            f'<div style="white-space:pre-wrap;word-break:break-word;padding:0.3rem 0.6rem;font-size:0.84rem;'
            f'max-height:160px;overflow-y:auto">{esc(text)}</div></div>')
    return '<div class="compared-evidence">' + "".join(rows) + "</div>"


def aligned_chunkings_html(text: str, comparison: Any, *, max_chars: int | None = None) -> str:
    """Two chunkings of `text` aligned by character offset (`rag_core.chunk_compare.ChunkingComparison`): the
    text in the middle, cut into rows at every boundary of either; A's chunks on the left, B's on the right
    (their number where they start, "end n" where they end, the overlap colour where two cover a row); a line
    across the row where a boundary falls, green when both chunkings cut there, A's or B's colour when one does."""
    def gutter(chunks: tuple[int, ...], starts: tuple[int, ...], ends: tuple[int, ...], line: str) -> str:
        bg = OVERLAP_BG if len(chunks) >= 2 else CHUNK_BG[chunks[0] % 2] if chunks else "#f3f4f6"
        marks = "".join(f'<span class="chunk-start" style="{_BADGE_STYLE}">{i}</span>' for i in starts)
        marks += "".join(f'<span class="chunk-end" style="color:{MARKER};font-size:0.7rem">'
                         + esc(t("end {index}", index=i)) + '</span> ' for i in ends)
        title = t("chunks {indexes}", indexes=", ".join(map(str, chunks))) if chunks else t("in no chunk")
        return (f'<td title="{esc(title)}" style="background:{bg};width:88px;vertical-align:top;padding:2px 4px;'
                f'{line}">{marks}</td>')

    shown = len(text) if max_chars is None else min(len(text), max_chars)
    out = ['<table class="aligned-chunkings" style="border-collapse:collapse;width:100%;font-size:0.88rem;'
           'table-layout:fixed"><thead><tr><th style="width:88px">A</th><th>' + esc(t("text (same for both)"))
           + '</th><th style="width:88px">B</th></tr></thead><tbody>']
    for row in comparison.rows:
        if row.start >= shown:
            break
        b = row.boundary
        inner = b is not None and 0 < b.offset < comparison.length
        line = f"border-top:2px solid {MARK_STYLE[b.mark][1]}" if inner else "border-top:1px solid #eef0f3"
        badge = (f'<span style="float:right;margin-left:6px">{mark_badge_html(b.mark)}</span>' if inner else "")
        cells = [gutter(row.a_chunks, b.a_starts if b else (), b.a_ends if b else (), line),
                 f'<td style="white-space:pre-wrap;word-break:break-word;vertical-align:top;padding:2px 8px;{line}">'
                 f'{badge}{esc(text[row.start:min(row.end, shown)])}</td>',
                 gutter(row.b_chunks, b.b_starts if b else (), b.b_ends if b else (), line)]
        out.append(f'<tr class="aligned-row" data-offset="{row.start}" data-mark="{esc(b.mark) if inner else ""}">'
                   + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    if shown < len(text):
        out.append(f'<div class="truncated" style="margin-top:0.5rem;color:#6b7280;font-style:italic">'
                   f'{esc(_showing(shown, len(text)))}</div>')
    return '<div style="max-height:720px;overflow-y:auto;border:1px solid #d5dbe3;border-radius:0.5rem">' + \
        "".join(out) + "</div>"
