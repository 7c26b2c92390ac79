"""PDF -> text with pypdf: pages joined by a blank line; encrypted and damaged files refused clearly."""

from __future__ import annotations

import io

from ..errors import LoaderError
from .extracted import clean_extracted, reason


def pdf_text(data: bytes, name: str) -> str:
    if b"%PDF-" not in data[:1024]:
        raise LoaderError(
            f"{name}: is not a PDF file (no %PDF- header); it may be another type of file renamed to .pdf"
        )
    from pypdf import PdfReader
    from pypdf.errors import DependencyError

    pages: list[str] = []
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")  # many PDFs only have an owner password
            except DependencyError:
                raise LoaderError(
                    f"{name}: the PDF is encrypted with AES and the 'cryptography' package is not "
                    "installed; install it, or remove the PDF's encryption"
                ) from None
            if not opened:
                raise LoaderError(
                    f"{name}: the PDF is password-protected; remove the password (for example print "
                    "it to a new PDF) and upload it again"
                )
        for page in reader.pages:
            page_text = clean_extracted(page.extract_text() or "").strip()
            if page_text:
                pages.append(page_text)
    except LoaderError:
        raise
    except Exception as exc:  # pypdf raises many exception types on damaged files
        raise LoaderError(
            f"{name}: could not read the PDF ({reason(exc)}); the file may be damaged: open it and "
            "save or export it again"
        ) from exc
    if not pages:
        raise LoaderError(f"{name}: no extractable text (scanned PDF? run OCR first)")
    return "\n\n".join(pages)
