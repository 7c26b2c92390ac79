"""DOCX -> Markdown-ish text with python-docx: Word headings become `#` headings, lists `-`, tables rows
of `|`-separated cells, in document order.

python-docx parses every XML part of the package into memory, so the package is measured first (see
`limits`): the XML parts' sizes as the ZIP declares them (zipfile never inflates a member past its
declared size), then the body's text, counted by a streaming parser that keeps nothing and stops at the
limit. Only a document within both limits is handed to python-docx.
"""

from __future__ import annotations

import io
import re
import zipfile
from xml.etree.ElementTree import XMLParser

from ..errors import LoaderError
from .extracted import Extracted, Format, clean_extracted, reason
from .limits import TextBudget, markup_limit, too_much_markup
from .options import LoadOptions

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_BODY = "word/document.xml"

_HEADING_STYLE = re.compile(r"^(?:heading|标题)\s*([1-9])$", re.IGNORECASE)
_TITLE_STYLES = frozenset({"title", "标题"})


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
        from docx.table import Table

        _measure(data, name, budget)
        document = docx.Document(io.BytesIO(data))
        blocks: list[str] = []
        for item in document.iter_inner_content():
            block = _docx_table(item) if isinstance(item, Table) else _docx_paragraph(item)
            if block:
                blocks.append(block)
    except LoaderError:
        raise
    except Exception as exc:  # python-docx / zipfile / lxml raise many types on damaged files
        raise LoaderError(
            f"{name}: could not read the Word document ({reason(exc)}); the file may be damaged: "
            "open it in Word and save it again as .docx", code="undecodable"
        ) from exc
    text = clean_extracted("\n\n".join(blocks))
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


def _style_names(paragraph: object) -> list[str]:
    """The paragraph's style name and those it is based on (a custom style based on Heading 2 is a
    heading too), lower-cased."""
    names: list[str] = []
    style = getattr(paragraph, "style", None)
    for _ in range(6):
        if style is None:
            break
        names.append((style.name or "").strip().lower())
        style = style.base_style
    return names


def _docx_paragraph(paragraph: object) -> str:
    text: str = paragraph.text  # type: ignore[attr-defined]
    if not text.strip():
        return ""
    for style in _style_names(paragraph):
        m = _HEADING_STYLE.match(style)
        if m or style in _TITLE_STYLES:
            level = min(int(m.group(1)), 6) if m else 1
            return "#" * level + " " + " ".join(text.split())
        if style.startswith("list bullet"):
            return "- " + text.strip()
        if style.startswith("list number"):
            return "1. " + text.strip()
    p_pr = paragraph._p.pPr  # type: ignore[attr-defined]
    if p_pr is not None and p_pr.numPr is not None:
        return "- " + text.strip()  # numbered or bulleted via numbering.xml; the marker is not in the text
    return text


def _docx_table(table: object) -> str:
    rows: list[str] = []
    for row in table.rows:  # type: ignore[attr-defined]
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            if previous is not None and cell._tc is previous:  # a merged cell repeats per grid column
                continue
            previous = cell._tc
            cells.append(" ".join(cell.text.split()))
        if any(cells):
            rows.append(" | ".join(cells))
    return "\n".join(rows)
