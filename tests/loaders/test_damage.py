"""Damaged text (issue 39): characters a PDF's fonts map to private-use or unknown code points are counted per page,
named in the document's notes and the ingest report, and a page with many of them is read by OCR instead (or the note
says how to have it read so). The PDFs are made here with reportlab and their fonts' ToUnicode maps damaged on
purpose, as the PDF that lost "10–30%" had them: the glyphs draw the right letters, the text says private-use."""

from __future__ import annotations

import io
import re

import pytest

from rag_core.loaders import damage, load_bytes
from rag_core.loaders.damage import Damage, count_damage, is_damaged
from rag_core.loaders.limits import TextBudget
from rag_core.records import PAGE
from tests.loaders.samples import CJK_FONT

SANS = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
SERIF = "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"
CLEAN = "Clean page: 支付网关 café naïve, nothing lost here."
HEAVY = ("Error rate 10–30% in three zones", "Restart the payment gateway workers", "Drain each zone in turn")
LIGHT = ("Budget 10–20 workers per zone – checked by the operator on call – and the pool sizes confirmed "
         "with the database team before the next release window opens for this quarter.",)


def damaged_pdf() -> bytes:
    """Four pages: clean (Chinese, accents), every "e", "a" and "–" private-use (page 2), only the dashes private-use
    (page 3: under 5% of its characters), clean again (page 4)."""
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(TTFont("DamagedSans", SANS))
    pdfmetrics.registerFont(TTFont("DamagedSerif", SERIF))
    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    buf = io.BytesIO()
    pdf = canvas.Canvas(buf, pageCompression=0)  # the ToUnicode maps are edited in the bytes below
    for font, lines in (("STSong-Light", (CLEAN,)), ("DamagedSans", HEAVY), ("DamagedSerif", LIGHT),
                        ("Helvetica", ("The last page is clean too.",))):
        y = 720
        for line in lines:
            text = pdf.beginText(60, y)
            text.setFont(font, 18 if font == "DamagedSans" else 9)
            text.textLine(line)
            pdf.drawText(text)
            y -= 40
        pdf.showPage()
    pdf.save()
    return _damage_tounicode(buf.getvalue())


def _damage_tounicode(data: bytes) -> bytes:
    """Map the fonts' "–" (both), "e" and "a" (DejaVuSans) to private-use code points: same lengths, so every offset
    in the PDF stays right."""
    for name, targets in ((b"DejaVuSans", (b"2013", b"0065", b"0061")), (b"DejaVuSerif", (b"2013",))):
        found = re.search(rb"/CMapName /[A-Z]{6}\+" + name + rb" def", data)
        assert found is not None, name
        end = data.index(b"endcmap", found.end())
        cmap = data[found.end():end]
        for target in targets:
            cmap = cmap.replace(b"<" + target + b">", b"<E" + target[1:] + b">")
        data = data[:found.end()] + cmap + data[end:]
    return data


def test_damaged_characters_are_unmapped_and_private_use_ones_only() -> None:
    assert all(is_damaged(c) for c in "\ufffd\ue003\uf8ff\U000f0001\U0010fffd\x01\x85")
    clean = "支付网关 テスト 한국어 café naïve Ünïcödé 😀👍🏽 “quotes” – — … ©® \t\n"
    assert not any(is_damaged(c) for c in clean)
    assert count_damage(clean) == Damage(0, len("".join(clean.split())))
    assert count_damage("10\ue00330% \ufffd") == Damage(2, 7)


def test_a_text_document_with_private_use_characters_gets_a_note() -> None:
    text = "# Runbook\n\nError rate 10\ue00330% in \ue010\ue011\ue012 zones; restart them.\n"
    doc = load_bytes(text.encode(), "notes/damaged.md")
    [note] = doc.note_phrases
    assert (note.code, note.params["count"], note.params["share"]) == ("load.damaged_text", 4, "9%")
    assert doc.notes == ("4 characters could not be read (9% of the text): private-use or unknown characters "
                         "where the file's letters should be",)
    assert doc.text == text  # the text is kept as read: the note says what is wrong with it
    clean = "# 运行手册\n\n支付网关 café naïve 😀 – “ok”: nothing is damaged here.\n"
    assert load_bytes(clean.encode(), "notes/clean.md").notes == ()
    one_bullet = "\uf0b7 " + "A long paragraph of ordinary words. " * 10
    assert load_bytes(one_bullet.encode(), "notes/bullet.md").notes == ()  # a stray icon-font bullet: no note


@pytest.fixture(scope="module")
def pdf() -> bytes:
    if not CJK_FONT.is_file():  # DejaVu comes with the same Debian font packages
        pytest.skip(f"{CJK_FONT} is missing")
    return damaged_pdf()


def test_damaged_pages_are_named_and_ocr_offered_without_the_extra(pdf: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(damage, "ocr_available", lambda: False)
    doc = load_bytes(pdf, "reports/q3.pdf")
    assert "10\ue01330%" in doc.text and "10\ue01320" in doc.text  # the fonts' private-use "–" as pypdf reads it
    assert doc.text.startswith(CLEAN.split(":")[0])
    assert [(p.code, p.params["pages"]) for p in doc.note_phrases] == [("load.damaged_pages", "2, 3"),
                                                                        ("load.damaged_offer_page", "2")]
    count = doc.note_phrases[0].params["count"]
    assert count == sum(map(is_damaged, doc.text)) and count > 20
    assert doc.notes[1] == ("over 5% of the characters of page 2 could not be read; to read it by OCR, install the "
                            'optional extra (pip install ".[ocr]") and ingest the file again')
    assert doc.encoding == "pdf" and not doc.ocr_pages


def test_the_ingest_report_carries_the_notes(pdf: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    from rag_core.ingest import Ingestor
    from rag_core.store.memory import InMemoryChunkStore
    from tests.fakes.embedder import FakeEmbedder

    monkeypatch.setattr(damage, "ocr_available", lambda: False)
    embedder, store = FakeEmbedder(), InMemoryChunkStore()
    store.open(embedder.name, embedder.dim)
    clean = "A clean note in plain English and 中文, with an emoji 😀.\n".encode()
    [report, other] = Ingestor(store, embedder).ingest_uploads([("q3.pdf", pdf), ("clean.md", clean)])
    assert report.status == "added" and [p.code for p in report.note_phrases] == ["load.damaged_pages",
                                                                                  "load.damaged_offer_page"]
    assert report.notes[0].startswith("pages 2, 3: ") and report.to_dict()["notes"] == list(report.notes)
    assert (other.status, other.notes) == ("added", ())


def test_when_ocr_of_a_damaged_page_fails_the_text_as_read_stays(pdf: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    from rag_core.errors import LoaderError
    from rag_core.loaders import pdf as pdf_loader

    def fail(data: bytes, name: str, indexes: list[int], texts: list[str], budget: TextBudget, options: object) -> None:
        texts[indexes[0]] = "half"
        budget.add(10_000)
        raise LoaderError(f"{name}: reading took longer than 1 seconds", code="too_slow")

    monkeypatch.setattr(pdf_loader, "_ocr_pages", fail)
    monkeypatch.setattr(damage, "ocr_available", lambda: False)
    offered = load_bytes(pdf, "reports/q3.pdf")
    monkeypatch.setattr(damage, "ocr_available", lambda: True)
    doc = load_bytes(pdf, "reports/q3.pdf", max_text_chars=len(offered.text) + 100)
    assert (doc.text, doc.places, doc.encoding) == (offered.text, offered.places, "pdf")
    assert [p.code for p in doc.note_phrases] == ["load.damaged_pages"]


@pytest.mark.slow  # runs OCR
def test_a_badly_damaged_page_is_read_by_ocr_when_it_is_installed(pdf: bytes) -> None:
    pytest.importorskip("rapidocr_onnxruntime")
    seen: list[tuple[int, int]] = []
    from rag_core.loaders import LoadOptions

    doc = load_bytes(pdf, "reports/q3.pdf", options=LoadOptions(on_page=lambda done, total: seen.append((done, total))))
    assert [(p.unit, p.number, p.ocr) for p in doc.places] == [(PAGE, 1, False), (PAGE, 2, True), (PAGE, 3, False),
                                                               (PAGE, 4, False)]
    assert doc.encoding == "pdf+ocr" and doc.ocr_pages == (2,) and seen == [(0, 1), (1, 1)]
    page2 = doc.text[doc.places[1].offset:doc.places[2].offset]
    assert not any(map(is_damaged, page2)) and "Restart the payment gateway workers" in page2, page2
    assert "10" in page2 and "30%" in page2
    assert [(p.code, p.params["pages"]) for p in doc.note_phrases] == [("load.damaged_page", "3"),
                                                                        ("load.damaged_ocr_page", "2")]
    assert doc.notes[1] == "page 2 was read by OCR instead: over 5% of its characters could not be read"
    assert doc.text.endswith("The last page is clean too.")
