"""PDF -> text, one `Place` per page (per slide in a slide deck: so every chunk knows its pages or slides), tables kept
with their header row, and the pages without a text layer read by OCR.

Three readers, each for what it does best (measured in bench/formats.py): pypdf extracts the text (143 pages/s
here, and its page content is measured before it parses it, see below); pdfplumber finds ruled tables (it
is 20x slower, so it reads only the pages pypdfium2 finds lines drawn on); pypdfium2 (PDFium, BSD/Apache)
renders the pages without text for OCR. PyMuPDF is faster still but AGPL, so it is not used.

Tables (`pdf_tables`): a table is written as Markdown tables that each start with its header row (`html.table_blocks`),
in its place among the page's text as pypdf read it (only the table's own region is read by pdfplumber: reading the
whole page that way merged a two-column paper's columns); a box that has no rows and columns of text (a figure's
frame) is not a table. A table that runs on from the previous page takes that table's header.

Slides (`pdf_slides`): a PDF whose pages have a screen's shape and few lines is a slide deck: each page is a slide
(place unit "slide"), its text headed by its title, as a .pptx is read; the outline's headings are not used then.

Pages without text: those that draw something (an image or paths) are OCR'd page by page when the `ocr` extra
is installed (`loaders.ocr`), their places marked `ocr`; a mixed PDF OCRs only those pages. Without the
extra a PDF with no text at all is refused naming the extra, and a mixed one is read without those pages,
with a note saying which were not read.

Headings from the outline: a PDF's text has no Markdown headings, so when the PDF has an outline (bookmarks), the
line on each entry's page that is its title (whitespace-normalised, case-insensitive; the first such line after the
previous entry's heading) becomes a Markdown heading, `#` repeated the entry's depth (1 for a top-level entry, at
most 6), so chunking sees the sections (heading paths, parents). An entry whose title is on no line of its page, or
whose page comes before the previous entry's heading, is skipped; a PDF without an outline reads as before. The
marks are put in the pages' text before the pages are joined, so the places' offsets count them. A line of the PDF
that the chunker would take for a heading or a code fence (`# a shell comment`, a Markdown sample) is escaped first
with a backslash, as the .pptx and sheet loaders do.

Extraction is bounded (see `limits`): each page's content streams are measured before pypdf parses them,
and the characters pypdf produces are counted as it goes, so a small PDF that expands to millions of
characters stops at the limit instead of filling memory; the deadline is checked before every page.
"""

from __future__ import annotations

import io
import math
import re
from typing import Any, NamedTuple

from ..errors import LoaderError
from ..phrases import Phrase
from ..records import PAGE, SLIDE, Place
from .extracted import Extracted, Format, clean_extracted, reason
from .limits import TextBudget, markup_limit, too_much_markup
from .ocr import needs_ocr, ocr_available, read_image
from .options import LoadOptions
from .pdf_layout import MAX_PIECES, PageText, page_pieces
from .pdf_slides import is_deck, title_slides
from .pdf_tables import read_tables

OCR_DPI = 200  # rendering resolution of a page for OCR (measured: 150 dpi loses small print, 300 is slower)
MIN_RULES = 4  # paths drawn on a page before pdfplumber looks for a table on it
_WS = re.compile(r"\s+")
# a line of the PDF that the chunker would take for a heading or a code fence (a shell comment, a Markdown sample):
# escaped as Markdown escapes it, before the outline's and the slides' headings are marked
_LOOKS_LIKE_BLOCK = re.compile(r"^(?= {0,3}(?:#{1,6}(?:[ \t]|$)|`{3}|~{3}))", re.M)


def pdf_text(data: bytes, name: str, _ext: str, budget: TextBudget, options: LoadOptions) -> Extracted:
    """The pages' text, one place per page with text, notes (what a person should know, as phrases); read as
    "pdf+ocr" when some page was read by OCR."""
    if b"%PDF-" not in data[:1024]:
        raise LoaderError(
            f"{name}: is not a PDF file (no %PDF- header); it may be another type of file renamed to .pdf",
            code="unsupported",
        )
    pages, layouts, texts, outline, sizes = _pypdf_pages(data, name, budget)
    try:
        drawn = _drawn_pages(data)
        tables = [i for i, (_, paths) in enumerate(drawn) if paths >= MIN_RULES and texts[i]]
        if tables:
            read_tables(data, pages, layouts, tables, texts, budget)
    except LoaderError:
        raise
    except Exception as exc:  # pdfium / pdfminer fail on a file pypdf could read: keep what pypdf read
        drawn = [(False, 0) for _ in texts]
        notes = [Phrase("load.no_layout", {"error": reason(exc)})]
    else:
        notes = []
    scanned = [i for i, text in enumerate(texts) if not text and any(drawn[i])]
    ocr_done: set[int] = set()
    if scanned:
        if not ocr_available():
            if len(scanned) == len(texts) or not any(texts):
                raise needs_ocr(name, f"the PDF has no text layer on its {len(texts)} page{'s' * (len(texts) > 1)} "
                                      "(a scanned PDF)")
            notes.append(Phrase("load.no_text_layer_many" if len(scanned) > 1 else "load.no_text_layer",
                                {"pages": _numbers(scanned)}))
        else:
            _ocr_pages(data, name, scanned, texts, budget, options)
            ocr_done = {i for i in scanned if texts[i]}
            if ocr_done:
                notes.append(Phrase("load.ocr_pages" if len(ocr_done) > 1 else "load.ocr_page",
                                    {"pages": _numbers(sorted(ocr_done))}))
    for i, text in enumerate(texts):
        escaped = _LOOKS_LIKE_BLOCK.sub(r"\\", text)
        budget.add(len(escaped) - len(text))
        texts[i] = escaped
    deck = is_deck(sizes, texts)
    if deck:
        title_slides(pages, layouts, texts, budget)
    else:
        _mark_headings(texts, outline, budget)
    parts: list[str] = []
    places: list[Place] = []
    size = 0
    for i, text in enumerate(texts):
        if text:
            offset = size + (2 if parts else 0)
            places.append(Place(offset, SLIDE if deck else PAGE, i + 1, ocr=i in ocr_done))
            parts.append(text)
            size = offset + len(text)
    if not parts:
        what = "OCR found no text either" if scanned and ocr_available() else "its pages are blank"
        raise LoaderError(f"{name}: no extractable text ({what}); nothing to index", code="empty")
    return Extracted("\n\n".join(parts), "pdf+ocr" if ocr_done else "pdf", tuple(places), tuple(notes))


FORMAT = Format(("pdf",), pdf_text)


def _numbers(indexes: list[int]) -> str:
    shown = ", ".join(str(i + 1) for i in indexes[:20])
    return shown + (f" and {len(indexes) - 20} more" if len(indexes) > 20 else "")


# --- text (pypdf) -------------------------------------------------------------------------------

class _Read(NamedTuple):
    pages: list[Any]  # pypdf's
    layouts: list[PageText | None]  # where each page's text sits (`pdf_layout`), None when not kept
    texts: list[str]
    outline: list[tuple[int, int, str]]  # see `_outline`
    sizes: list[tuple[float, float]]  # width and height as shown, points


def _pypdf_pages(data: bytes, name: str, budget: TextBudget) -> _Read:
    """What pypdf reads of the pages in one pass."""
    from pypdf import PdfReader
    from pypdf.errors import DependencyError

    pages: list[str] = []
    sizes: list[tuple[float, float]] = []
    layouts: list[PageText | None] = []
    room = MAX_PIECES
    markup = 0
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")  # many PDFs only have an owner password
            except DependencyError:
                raise LoaderError(
                    f"{name}: the PDF is encrypted with AES and the 'cryptography' package is not "
                    "installed; install it, or remove the PDF's encryption", code="undecodable"
                ) from None
            if not opened:
                raise LoaderError(
                    f"{name}: the PDF is password-protected; remove the password (for example print "
                    "it to a new PDF) and upload it again", code="undecodable"
                )
        for number, page in enumerate(reader.pages, start=1):
            budget.tick(f"page {number}")
            # pypdf parses a page's whole content stream before it extracts anything: measure it first.
            markup += _content_bytes(page)
            if markup > markup_limit(budget.limit):
                raise too_much_markup(name, "its page content", markup, budget.limit)
            raw, layout = _extract(page, budget, room)
            room -= len(layout.pieces) if layout is not None else 0
            layouts.append(layout)
            page_text = clean_extracted(raw).strip()
            if page_text:
                budget.add(len(page_text) + 2)  # + the blank line between pages
            pages.append(page_text)
            sizes.append(_shown_size(page))
    except LoaderError:
        raise
    except Exception as exc:  # pypdf raises many exception types on damaged files
        raise LoaderError(
            f"{name}: could not read the PDF ({reason(exc)}); the file may be damaged: open it and "
            "save or export it again", code="undecodable"
        ) from exc
    return _Read(list(reader.pages), layouts, pages, _outline(reader), sizes)


def _shown_size(page: Any) -> tuple[float, float]:
    """The page's width and height as a reader shows it (turned by /Rotate); (0, 0) when its box is unreadable."""
    try:
        box = page.mediabox
        width, height = abs(float(box.width)), abs(float(box.height))
        turned = int(page.get("/Rotate", 0) or 0) % 180 == 90
    except Exception:  # a damaged media box: the page is just not a slide
        return (0.0, 0.0)
    return (height, width) if turned else (width, height)


def _outline(reader: Any) -> list[tuple[int, int, str]]:
    """The outline's entries in order as (page index, depth: 1 for a top-level entry, title); [] when the PDF has no
    outline or pypdf cannot read it (the headings are a help, never a reason to refuse the file)."""
    entries: list[tuple[int, int, str]] = []

    def walk(items: list[Any], depth: int) -> None:
        for item in items:
            if isinstance(item, list):  # the entries under the item before it
                walk(item, depth + 1)
                continue
            page = reader.get_destination_page_number(item)
            title = _WS.sub(" ", str(item.title or "")).strip()
            if page is not None and page >= 0 and title:
                entries.append((page, depth, title))

    try:
        walk(list(reader.outline), 1)
    except Exception:  # a damaged outline: read the text without headings
        return []
    return entries


def _mark_headings(texts: list[str], outline: list[tuple[int, int, str]], budget: TextBudget) -> None:
    """Make the line of each outline entry's title a Markdown heading in `texts` (the module's rule)."""
    lines = {i: texts[i].split("\n") for i in {page for page, _, _ in outline} if i < len(texts)}
    after = (-1, -1)  # (page, line) of the previous heading
    for page, depth, title in outline:
        if page not in lines:
            continue
        want = title.casefold()
        found = next((n for n, line in enumerate(lines[page]) if (page, n) > after
                      and _WS.sub(" ", line).strip().casefold() == want), None)
        if found is None:
            continue
        mark = "#" * min(depth, 6) + " "
        lines[page][found] = mark + lines[page][found].strip()
        budget.add(len(mark))
        after = (page, found)
    for i, page_lines in lines.items():
        texts[i] = "\n".join(page_lines)


def _extract(page: Any, budget: TextBudget, room: int) -> tuple[str, PageText | None]:
    """The page's text and its pieces (`pdf_layout`, at most `room` of them); stops (raises) as soon as the document
    passes the budget, mid-page."""
    seen = 0

    def count(text: str) -> None:
        nonlocal seen
        seen += len(text)
        if budget.used + seen > budget.limit:
            raise budget.exceeded()

    return page_pieces(page, count, room)


def _content_bytes(page: Any) -> int:
    """Decompressed size of the page's content streams (pypdf caps each stream's decompression itself)."""
    from pypdf.generic import ArrayObject, StreamObject

    contents = page.get("/Contents")
    if contents is None:
        return 0
    obj = contents.get_object()
    parts = [o.get_object() for o in obj] if isinstance(obj, ArrayObject) else [obj]
    return sum(len(p.get_data()) for p in parts if isinstance(p, StreamObject))


# --- what is drawn (pypdfium2) ------------------------------------------------------------------

def _drawn_pages(data: bytes) -> list[tuple[bool, int]]:
    """Per page: (draws an image, how many paths it draws). Reads the page objects only, renders nothing."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    pdf = pdfium.PdfDocument(data, password="")
    try:
        out = []
        for page in pdf:
            images = paths = 0
            for obj in page.get_objects(max_depth=2):
                if obj.type == raw.FPDF_PAGEOBJ_IMAGE:
                    images += 1
                elif obj.type == raw.FPDF_PAGEOBJ_PATH:
                    paths += 1
            out.append((images > 0, paths))
            page.close()
        return out
    finally:
        pdf.close()


# --- OCR (pypdfium2 renders, loaders.ocr reads) ----------------------------------------------------

def _render_scale(width: float, height: float, max_pixels: int) -> float:
    """Pixels per point to render a page of `width` x `height` points at OCR_DPI, or smaller so that the image
    (each side rounded up to whole pixels, as pypdfium2 renders) has at most `max_pixels`."""
    scale = min(OCR_DPI / 72, (max_pixels / max(1.0, width * height)) ** 0.5)
    while scale > 0 and math.ceil(width * scale) * math.ceil(height * scale) > max_pixels:
        scale *= 0.995
    return scale


def _ocr_pages(data: bytes, name: str, indexes: list[int], texts: list[str], budget: TextBudget,
               options: LoadOptions) -> None:
    import pypdfium2 as pdfium

    if len(indexes) > options.ocr_max_pages:
        raise LoaderError(f"{name}: {len(indexes)} pages have no text layer and need OCR, more than the "
                          f"{options.ocr_max_pages} one PDF may have (setting loader.ocr-max-pages); split the PDF or "
                          "raise the setting", code="too_large")
    pdf = pdfium.PdfDocument(data, password="")
    i = indexes[0]
    try:
        for done, i in enumerate(indexes):
            budget.tick(f"OCR of page {i + 1}, {done} of {len(indexes)} pages done")
            if options.on_page is not None:
                options.on_page(done, len(indexes))
            page = pdf[i]
            width, height = page.get_size()  # points: 1/72 inch
            scale = _render_scale(width, height, options.ocr_max_pixels)
            image = page.render(scale=scale).to_pil().convert("RGB")
            page.close()
            text = read_image(image).strip()
            if text:
                budget.add(len(text) + 2)
            texts[i] = text
        if options.on_page is not None:
            options.on_page(len(indexes), len(indexes))
    except LoaderError:
        raise
    except Exception as exc:  # rendering or the OCR model failed on this page
        raise LoaderError(f"{name}: OCR of page {i + 1} failed ({reason(exc)}); the page may be damaged: open the "
                          "PDF and save or print it again", code="undecodable") from exc
    finally:
        pdf.close()
