"""PDF -> text with pypdf: pages joined by a blank line; encrypted and damaged files refused clearly.

Extraction is bounded (see `limits`): each page's content streams are measured before pypdf parses
them, and the characters pypdf produces are counted as it goes, so a small PDF that expands to
millions of characters stops at the limit instead of filling memory.
"""

from __future__ import annotations

import io
from typing import Any

from ..errors import LoaderError
from .extracted import clean_extracted, reason
from .limits import TextBudget, markup_limit, too_much_markup


def pdf_text(data: bytes, name: str, budget: TextBudget) -> str:
    if b"%PDF-" not in data[:1024]:
        raise LoaderError(
            f"{name}: is not a PDF file (no %PDF- header); it may be another type of file renamed to .pdf",
            code="unsupported",
        )
    from pypdf import PdfReader
    from pypdf.errors import DependencyError

    pages: list[str] = []
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
        for page in reader.pages:
            # pypdf parses a page's whole content stream before it extracts anything: measure it first.
            markup += _content_bytes(page)
            if markup > markup_limit(budget.limit):
                raise too_much_markup(name, "its page content", markup, budget.limit)
            page_text = clean_extracted(_extract(page, budget) or "").strip()
            if page_text:
                budget.add(len(page_text) + 2)  # + the blank line between pages
                pages.append(page_text)
    except LoaderError:
        raise
    except Exception as exc:  # pypdf raises many exception types on damaged files
        raise LoaderError(
            f"{name}: could not read the PDF ({reason(exc)}); the file may be damaged: open it and "
            "save or export it again", code="undecodable"
        ) from exc
    if not pages:
        raise LoaderError(f"{name}: no extractable text (scanned PDF? run OCR first)", code="empty")
    return "\n\n".join(pages)


def _extract(page: Any, budget: TextBudget) -> str:
    """The page's text; stops (raises) as soon as the document passes the budget, mid-page."""
    seen = 0

    def count(text: str, *_: Any) -> None:
        nonlocal seen
        seen += len(text)
        if budget.used + seen > budget.limit:
            raise budget.exceeded()

    return page.extract_text(visitor_text=count)


def _content_bytes(page: Any) -> int:
    """Decompressed size of the page's content streams (pypdf caps each stream's decompression itself)."""
    from pypdf.generic import ArrayObject, StreamObject

    contents = page.get("/Contents")
    if contents is None:
        return 0
    obj = contents.get_object()
    parts = [o.get_object() for o in obj] if isinstance(obj, ArrayObject) else [obj]
    return sum(len(p.get_data()) for p in parts if isinstance(p, StreamObject))
