"""DOCX -> Markdown-ish text, in document order: headings become `#` headings, list items keep their numbers,
tables become Markdown tables that repeat their header row.

python-docx opens the package and its parts; the body is walked here, because python-docx's own walk
(`iter_inner_content`, `Paragraph.text`) skips content controls (w:sdt: Word's cover pages and form fields, so a
document's title was lost), tracked insertions and inline controls (issue 39). A heading is a paragraph with an
outline level, its own or its style's (Normal paragraphs made headings in the navigation pane are common in Chinese
corporate documents), or with a heading style by name (Heading 1-9, 标题 1-9, Title). List numbers ("1.", "1.1",
"a.", "第一章") are computed from numbering.xml (`word_numbering`); a numbered heading keeps its number. A table
of contents (its control, or TOC-styled paragraphs) is left out: it repeats the headings with page numbers.

python-docx parses every XML part of the package into memory, so the package is measured first (see
`limits`): the XML parts' sizes as the ZIP declares them (zipfile never inflates a member past its
declared size), then the body's text, counted by a streaming parser that keeps nothing and stops at the
limit. Only a document within both limits is handed to python-docx.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from xml.etree.ElementTree import XMLParser

from ..errors import LoaderError
from .extracted import Extracted, Format, clean_extracted, reason
from .html import table_blocks
from .limits import TextBudget, markup_limit, too_much_markup
from .options import LoadOptions
from .word_numbering import Marker, Numbering, val

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_BODY = "word/document.xml"

_HEADING_STYLE = re.compile(r"^(?:heading|标题)\s*([1-9])$", re.IGNORECASE)
_TITLE_STYLES = frozenset({"title", "标题"})
HEADING_MAX_CHARS = 200  # a longer "heading" is body text given an outline level by mistake: it would be every
# chunk's heading path under it
_MAX_SPAN = 64  # grid columns one cell (or a row's leading gap) may take: a forged gridSpan cannot blow up memory
_TOC_STYLE = re.compile(r"^(?:toc|目录)\s*[1-9]$")
# Elements that only wrap blocks (at body or cell level) or runs (inside a paragraph): read through them.
_BLOCK_WRAPPERS = frozenset({_W + "customXml", _W + "ins", _W + "moveTo"})
_INLINE_WRAPPERS = frozenset({_W + "hyperlink", _W + "ins", _W + "moveTo", _W + "smartTag", _W + "customXml",
                              _W + "fldSimple", _W + "dir", _W + "bdo"})


def docx_text(data: bytes, name: str, _ext: str, budget: TextBudget, _options: LoadOptions) -> Extracted:
    if data.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        raise LoaderError(
            f"{name}: is an old Word .doc file or a password-protected document, not a .docx; "
            "open it in Word and save it as .docx without a password", code="unsupported"
        )
    if not data.startswith(b"PK"):
        raise LoaderError(
            f"{name}: is not a valid .docx file (a .docx is a ZIP package); it may be another type of "
            "file renamed to .docx, or damaged", code="unsupported"
        )
    try:
        import docx

        _measure(data, name, budget)
        document = docx.Document(io.BytesIO(data))
        reader = _Reader(document)
        text = _join(reader.blocks(document.element.body))
    except LoaderError:
        raise
    except Exception as exc:  # python-docx / zipfile / lxml raise many types on damaged files
        raise LoaderError(
            f"{name}: could not read the Word document ({reason(exc)}); the file may be damaged: "
            "open it in Word and save it again as .docx", code="undecodable"
        ) from exc
    text = clean_extracted(text)
    if not text.strip():
        raise LoaderError(f"{name}: the Word document has no text; nothing to index", code="empty")
    return Extracted(text, "docx")


FORMAT = Format(("docx",), docx_text)


def _measure(data: bytes, name: str, budget: TextBudget) -> None:
    """Refuse a package whose XML or body text is over the limits, without inflating it in memory."""
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        xml = [i for i in package.infolist() if i.filename.endswith((".xml", ".rels"))]
        declared = sum(i.file_size for i in xml)
        if declared > markup_limit(budget.limit):
            raise too_much_markup(name, "its XML", declared, budget.limit)
        if _BODY not in package.namelist():
            return  # python-docx finds (or misses) the body itself; the XML is bounded above
        parser = XMLParser(target=_TextCounter(budget))
        with package.open(_BODY) as body:
            while chunk := body.read(1 << 16):
                parser.feed(chunk)
        parser.close()


class _TextCounter:
    """An XMLParser target that only counts the characters of the body's text runs (w:t; a tab or
    break is one character); it builds no tree, so memory stays flat however large the body is."""

    def __init__(self, budget: TextBudget) -> None:
        self.budget = budget
        self.in_text = False

    def start(self, tag: str, _attrib: dict[str, str]) -> None:
        if tag == _W + "t":
            self.in_text = True
        elif tag in (_W + "tab", _W + "br", _W + "cr"):
            self.budget.add(1)

    def end(self, tag: str) -> None:
        if tag == _W + "t":
            self.in_text = False

    def data(self, text: str) -> None:
        if self.in_text:
            self.budget.add(len(text))

    def close(self) -> None:
        return None


@dataclass(frozen=True)
class _Style:
    """What a paragraph style says about structure: its name, the style it is based on, its outline level and
    the list (numId, ilvl) its paragraphs are in."""

    name: str
    based_on: str | None
    outline: int | None
    num_id: str | None
    ilvl: int | None


class _Reader:
    """One document's body as Markdown-ish blocks, in order. Holds the styles, the lists and their running counters
    (a list's numbers count on across the document, so the blocks must be read once, in order)."""

    def __init__(self, document: Any) -> None:
        self.styles: dict[str, _Style] = {}
        self.default_style: str | None = None
        for style in document.styles.element.findall(_W + "style"):
            if style.get(_W + "type") != "paragraph":
                continue
            style_id = style.get(_W + "styleId") or ""
            p_pr = style.find(_W + "pPr")
            num_pr = p_pr.find(_W + "numPr") if p_pr is not None else None
            ilvl = val(num_pr, "ilvl")
            self.styles[style_id] = _Style(
                (val(style, "name", "") or "").strip().lower(), val(style, "basedOn"), _outline(p_pr),
                val(num_pr, "numId"), int(ilvl) if ilvl and ilvl.isdigit() else None)
            if style.get(_W + "default") in ("1", "true", "on"):
                self.default_style = style_id
        style_num_ids = {k: s.num_id for k, s in self.styles.items() if s.num_id}
        try:
            numbering = document.part.numbering_part.element
        except (KeyError, NotImplementedError):
            numbering = None
        self.numbering = Numbering(numbering, style_num_ids)

    def blocks(self, container: Any) -> Iterator[tuple[str, str | None]]:
        """(block, the list it is an item of or None), in document order; a block may be empty (nothing to
        write)."""
        for item in _items(container):
            if item.tag == _W + "tbl":
                yield from ((block, None) for block in self.table(item))
            else:
                yield self.paragraph(item)

    # --- paragraphs ---------------------------------------------------------------------------------------------

    def _chain(self, p_pr: Any) -> list[tuple[str, _Style]]:
        """The paragraph's style and those it is based on, nearest first."""
        style_id = val(p_pr, "pStyle") or self.default_style
        chain: list[tuple[str, _Style]] = []
        while style_id is not None and style_id in self.styles and len(chain) < 10:
            style = self.styles[style_id]
            if any(style is s for _, s in chain):
                break
            chain.append((style_id, style))
            style_id = style.based_on
        return chain

    def paragraph(self, p: Any) -> tuple[str, str | None]:
        """The paragraph as a Markdown heading, a list item ("1.", "a.", "-", indented 3 spaces a level) or text."""
        p_pr = p.find(_W + "pPr")
        chain = self._chain(p_pr)
        marker = self._marker(p_pr, chain)  # counted even for an empty item: Word numbers it too
        text = _paragraph_text(p)
        if not text.strip():
            return "", None
        names = [s.name for _, s in chain]
        if any(_TOC_STYLE.match(n) for n in names):
            return "", None  # a table of contents repeats the headings, with page numbers
        level = _heading_level(p_pr, chain) if len(text) <= HEADING_MAX_CHARS else None
        if level is not None and marker is not None and marker.bullet:
            marker = None
        if level is not None:
            number = f"{marker.text}{' ' if marker.space else ''}" if marker and marker.text else ""
            return "#" * level + " " + number + " ".join(text.split()), None
        if marker is not None:
            indent = "   " * marker.level
            return f"{indent}{marker.text or '-'} {text.strip()}", marker.list_id
        if any(n.startswith("list number") for n in names):
            return "1. " + text.strip(), ""  # a list style whose list is missing from numbering.xml
        if any(n.startswith("list bullet") for n in names) or _num_pr(p_pr) is not None:
            return "- " + text.strip(), ""  # numbered or bulleted by a list we cannot find: still a list item
        return text, None

    def _marker(self, p_pr: Any, chain: list[tuple[str, _Style]]) -> Marker | None:
        """The paragraph's list number, from its own numPr or its style's (counted: call once per paragraph)."""
        num_pr = _num_pr(p_pr)
        num_id = val(num_pr, "numId")
        ilvl_text = val(num_pr, "ilvl")
        ilvl = int(ilvl_text) if ilvl_text and ilvl_text.isdigit() else None
        for style_id, style in chain:
            if num_id is not None:
                break
            if style.num_id is not None:
                num_id = style.num_id
                if ilvl is None:
                    ilvl = style.ilvl if style.ilvl is not None else self.numbering.style_level(num_id, style_id)
        if num_id is None or num_id == "0":  # numId 0: "not numbered", even where the style is
            return None
        return self.numbering.marker(num_id, ilvl or 0)

    # --- tables -------------------------------------------------------------------------------------------------

    def table(self, tbl: Any) -> Iterator[str]:
        """A table as Markdown tables that each start with its header row (`html.table_blocks`, as HTML and PDF
        tables): a table split across chunks still says in each what its columns are. A merged cell keeps its
        grid columns (its text, then empty cells); a vertically merged cell repeats its text in each row, so
        every row reads whole. A one-row or one-column table is layout: its cells are paragraphs."""
        rows: list[list[str]] = []
        above: dict[int, str] = {}  # grid column -> text of the vertically merged cell that starts there
        for tr in _rows(tbl):
            cells: list[str] = [""] * min(_int(val(tr.find(_W + "trPr"), "gridBefore"), 0), _MAX_SPAN)
            for tc in _cells(tr):
                tc_pr = tc.find(_W + "tcPr")
                span = min(max(_int(val(tc_pr, "gridSpan"), 1), 1), _MAX_SPAN)
                column = len(cells)
                merge = tc_pr.find(_W + "vMerge") if tc_pr is not None else None
                if merge is not None and merge.get(_W + "val") != "restart":
                    text = above.get(column, "")
                else:
                    text = self.cell_text(tc)
                    if merge is not None:
                        above[column] = text
                cells += [text] + [""] * (span - 1)
            if any(cells):
                rows.append(cells)
        if not rows:
            return
        width = max(len(r) for r in rows)
        if width == 1 or len(rows) == 1:
            for r in rows:
                yield " · ".join(c for c in r if c)
            return
        rows = [r + [""] * (width - len(r)) for r in rows]
        yield from table_blocks(rows[0], rows[1:])

    def cell_text(self, tc: Any) -> str:
        """A cell's paragraphs (with their list numbers) and nested tables as one line, `|` escaped."""
        parts: list[str] = []
        for item in _items(tc):
            if item.tag == _W + "tbl":
                parts.extend(self.cell_text(cell) for tr in _rows(item) for cell in _cells(tr))
                continue
            marker = self._marker(item.find(_W + "pPr"), self._chain(item.find(_W + "pPr")))
            text = _paragraph_text(item)
            if text.strip():
                parts.append(f"{marker.text} {text}" if marker and marker.text else text)
        return " ".join(" ".join(parts).split()).replace("|", "\\|")


def _join(blocks: Iterator[tuple[str, str | None]]) -> str:
    """Blocks separated by a blank line; the items of one list by a line break, so a list stays one paragraph
    (as the HTML loader writes lists) and a chunk boundary falls between lists before it falls inside one."""
    out: list[str] = []
    previous: str | None = None
    for block, list_id in blocks:
        if not block:
            continue
        if out:
            out.append("\n" if list_id and list_id == previous else "\n\n")
        out.append(block)
        previous = list_id
    return "".join(out)


def _items(container: Any) -> Iterator[Any]:
    """The paragraphs and tables of a body or cell in order, including those inside block content controls
    (w:sdt: a cover page, a filled-in form field) and custom XML; python-docx's `iter_inner_content` skips those.
    A table of contents control and a control still showing its placeholder text are left out."""
    for child in container:
        tag = child.tag
        if tag in (_W + "p", _W + "tbl"):
            yield child
        elif tag == _W + "sdt":
            if _kept_control(child):
                content = child.find(_W + "sdtContent")
                if content is not None:
                    yield from _items(content)
        elif tag in _BLOCK_WRAPPERS:
            yield from _items(child)


def _kept_control(sdt: Any) -> bool:
    properties = sdt.find(_W + "sdtPr")
    if properties is None:
        return True
    if properties.find(_W + "showingPlcHdr") is not None:
        return False  # "Click here to enter a date." is Word's prompt, not the document's text
    gallery = properties.find(f"{_W}docPartObj/{_W}docPartGallery")
    return gallery is None or (gallery.get(_W + "val") or "").lower() != "table of contents"


def _rows(tbl: Any) -> Iterator[Any]:
    return _children(tbl, _W + "tr")


def _cells(tr: Any) -> Iterator[Any]:
    return _children(tr, _W + "tc")


def _children(parent: Any, tag: str) -> Iterator[Any]:
    """The `tag` children of `parent`, those inside content controls and other block wrappers too."""
    for child in parent:
        if child.tag == tag:
            yield child
        elif child.tag == _W + "sdt" or child.tag in _BLOCK_WRAPPERS:
            content = child.find(_W + "sdtContent") if child.tag == _W + "sdt" else child
            if content is not None:
                yield from _children(content, tag)


def _paragraph_text(p: Any) -> str:
    """The paragraph's text as Word shows it: its runs, including those inside hyperlinks, inline content
    controls, tracked insertions, smart tags and simple fields (python-docx's `Paragraph.text` reads only direct
    runs and hyperlinks); not deleted text, nor text boxes and drawings anchored in it."""
    out: list[str] = []
    stack = list(reversed(p))
    while stack:
        item = stack.pop()
        tag = item.tag
        if tag == _W + "r":
            for part in item:
                if part.tag == _W + "t":
                    out.append(part.text or "")
                elif part.tag in (_W + "tab", _W + "ptab"):
                    out.append("\t")
                elif part.tag == _W + "br":
                    out.append("\n" if part.get(_W + "type") in (None, "textWrapping") else "")
                elif part.tag == _W + "cr":
                    out.append("\n")
                elif part.tag == _W + "noBreakHyphen":
                    out.append("-")
        elif tag == _W + "sdt":
            content = item.find(_W + "sdtContent")
            if content is not None:
                stack.extend(reversed(content))
        elif tag in _INLINE_WRAPPERS:
            stack.extend(reversed(item))
    return "".join(out)


def _num_pr(p_pr: Any) -> Any:
    return p_pr.find(_W + "numPr") if p_pr is not None else None


def _outline(p_pr: Any) -> int | None:
    value = val(p_pr, "outlineLvl")
    return int(value) if value is not None and value.isdigit() else None


def _heading_level(p_pr: Any, chain: list[tuple[str, _Style]]) -> int | None:
    """The Markdown heading level (1-6) of a paragraph, or None for body text. The paragraph's own outline level
    first (a Normal paragraph made a heading in the navigation pane: common in Chinese corporate documents),
    then, nearest style first, a heading style's name (Heading 1-9, 标题 1-9, Title: documents whose styles
    lost their outline levels), then the style's outline level. Level 9 ("body text") is not a heading."""
    outline = _outline(p_pr)
    if outline is None:
        for _, style in chain:
            m = _HEADING_STYLE.match(style.name)
            if m:
                return min(int(m.group(1)), 6)
            if style.name in _TITLE_STYLES:
                return 1
            if style.outline is not None:
                outline = style.outline
                break
    if outline is None or outline > 8:
        return None
    return min(outline + 1, 6)


def _int(value: str | None, default: int) -> int:
    return int(value) if value is not None and value.isdigit() else default
