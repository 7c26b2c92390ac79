"""The format registry (`loaders.formats`): one declaration per extractor module, one line each in FORMATS, and
every list of supported types read from it."""

from __future__ import annotations

import pytest

from rag_core.loaders import (
    SUPPORTED_EXTENSIONS,
    SUPPORTED_TEXT,
    TEXT_EXTENSIONS,
    formats,
    html,
    load_bytes,
    ocr,
    pdf,
    sheets,
    slides,
    text,
    word,
)
from rag_core.loaders.extracted import Extracted, Format


def test_every_extractor_module_is_registered_and_every_extension_once() -> None:
    declared = [text.FORMAT, pdf.FORMAT, word.FORMAT, html.FORMAT, sheets.XLSX, sheets.DELIMITED, slides.FORMAT,
                ocr.FORMAT]
    assert list(formats.FORMATS) == declared
    assert SUPPORTED_EXTENSIONS == tuple(e for f in declared for e in f.extensions)
    assert len(set(SUPPORTED_EXTENSIONS)) == len(SUPPORTED_EXTENSIONS)
    assert SUPPORTED_TEXT == ", ".join("." + e for e in SUPPORTED_EXTENSIONS)
    assert TEXT_EXTENSIONS == {"md", "markdown", "txt"}
    assert all(formats.BY_EXTENSION[e].extensions.count(e) == 1 for e in SUPPORTED_EXTENSIONS)


def test_an_extension_claimed_twice_is_a_mistake_in_the_registry() -> None:
    def read(data: bytes, name: str, ext: str, budget: object, options: object) -> Extracted:
        return Extracted(data.decode(), "utf-8")

    with pytest.raises(ValueError, match=r"\.txt is claimed twice"):
        formats.by_extension((text.FORMAT, Format(("txt",), read)))
    with pytest.raises(ValueError, match="lower-case"):
        formats.by_extension((Format((".RST",), read),))


def test_every_format_gives_its_document_what_its_extractor_read() -> None:
    doc = load_bytes("问题,答案\n怎么重启,先停再起\n".encode("gbk"), "faq.csv")
    assert (doc.encoding, [p.number for p in doc.places]) == ("gb18030", [2])
    assert [n.code for n in doc.note_phrases] == ["load.qa_table"] and doc.notes == ("Q&A table (问题 / 答案)",)
