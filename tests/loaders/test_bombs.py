"""Bombs and junk in the new formats: each refused in one line, before a parser loads what it would expand to.

Office packages (.xlsx, .pptx) are checked as .docx is (rag_core.loaders.packages): the XML the ZIP declares is
bounded by the text limit, and an XML part declaring a document type (the way of entity bombs) is refused.
"Before a parser loads it" is measured in memory (the peak Python allocated), not in seconds. `slow`: some build
inputs of tens of megabytes, so `make test-unit` leaves them out."""

from __future__ import annotations

import io
import tracemalloc
import zipfile

import pytest

from rag_core.errors import LoaderError
from rag_core.loaders import load_bytes
from tests.loaders.samples import LAUGHS, deck, patch_package, workbook, zip_bomb

pytestmark = pytest.mark.slow


def refused(data: bytes, name: str, fragment: str, code: str, **kwargs) -> str:
    tracemalloc.start()
    try:
        with pytest.raises(LoaderError) as info:
            load_bytes(data, name, **kwargs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert fragment in message and info.value.code == code, message
    assert message.startswith(f"{name}: ") and "\n" not in message  # one line, naming the file
    return message if peak < 4 * len(data) + 64 * 1024 * 1024 else pytest.fail(f"{peak:,} bytes at peak")


def test_xlsx_zip_bomb() -> None:
    data = zip_bomb(workbook(), "xl/worksheets/sheet9.xml")
    assert len(data) < 200_000
    refused(data, "bomb.xlsx", "may be a decompression bomb", "too_much_text", max_text_chars=1000)


def test_xlsx_xml_bomb() -> None:
    refused(patch_package(workbook(), add={"xl/sharedStrings.xml": LAUGHS}), "laughs.xlsx",
            "declares an XML document type", "undecodable")


def test_pptx_zip_and_xml_bombs() -> None:
    refused(zip_bomb(deck(), "ppt/slides/slide9.xml"), "bomb.pptx", "may be a decompression bomb", "too_much_text",
            max_text_chars=1000)
    slide = zipfile.ZipFile(io.BytesIO(deck())).read("ppt/slides/slide1.xml")
    root = slide.index(b"<p:sld")
    laughs = b'<!DOCTYPE p:sld [<!ENTITY a "' + b"x" * 100 + b'">]>'
    data = patch_package(deck(), {"ppt/slides/slide1.xml": (slide[root:root + 6], laughs + slide[root:root + 6])})
    refused(data, "laughs.pptx", "declares an XML document type", "undecodable")


def test_a_sheet_20000_columns_wide() -> None:
    data = workbook()
    sheet = zipfile.ZipFile(io.BytesIO(data)).read("xl/worksheets/sheet1.xml")
    rows = sheet[sheet.index(b"<sheetData>"):sheet.index(b"</sheetData>")]
    wide = b'<sheetData><row r="1">' + b'<c t="inlineStr"><is><t>h</t></is></c>' * 20_000 + b"</row>"
    refused(patch_package(data, {"xl/worksheets/sheet1.xml": (rows, wide)}), "wide.xlsx",
            "row 1 has values in 20,000 columns, more than the 1,024", "too_much_text")
    refused(b"h," * 20_000 + b"\n", "wide.csv", "row 1 has values in 20,000 columns", "too_much_text")


def test_a_csv_with_a_50_mb_line() -> None:
    data = b"Alert,Notes\nHighCPU," + b"x" * (50 * 1024 * 1024) + b"\n"
    refused(data, "long.csv", "line 2 is 52,428,808 characters long, more than the 1,000,000", "too_much_text",
            max_bytes=60 * 1024 * 1024)


@pytest.mark.parametrize(("data", "name", "fragment", "code"), [
    (b"just text, renamed", "fake.png", "is not a PNG image", "unsupported"),
    (b"PK\x03\x04 not a zip", "fake.xlsx", "is not a valid Excel workbook", "unsupported"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(100), "old.xlsx", "old Excel .xls file", "unsupported"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(100), "old.pptx", "old PowerPoint .ppt file", "unsupported"),
    (workbook()[:3000], "cut.xlsx", "is not a valid Excel workbook", "unsupported"),
    (b"\x7fELF\x02\x01" + bytes(300), "tool.csv", "binary", "binary"),
    (b"%PDF-1.4 renamed", "page.html", "binary file (a PDF file)", "binary"),
])
def test_junk_named_as_a_new_format(data: bytes, name: str, fragment: str, code: str) -> None:
    refused(data, name, fragment, code)
