"""Pages and slides through the app (AppTest): a PDF with a table across a page break and a three-slide deck
uploaded on the Knowledge base page into Milvus Lite (the local embedder), then the debugger's hits and evidence
cards, the chat's citation chips and the chunk preview show the page or slide each chunk is on."""

import pytest

from tests.loaders.samples import deck, table_pdf
from tests.ui.apptest_helpers import app_at, texts
from tests.ui.test_ui_chat import ask, assistants, popover_labels
from tests.ui.test_ui_knowledge_base import report_table, uploader

PDF_QUERY = "Alert042 threshold runbook"  # a row of the table's part on page 2
DECK_QUERY = "rollback timeline pager fired"  # the table on slide 2


@pytest.fixture
def located_kb(fresh_kb):
    at = app_at("pages/knowledge_base.py")
    uploader(at).set_value([("catalogue.pdf", table_pdf(), "application/pdf"),
                            ("incident.pptx", deck(), "application/octet-stream")])
    at.run()
    at.button(key="kb.ingest").click().run()
    assert not at.exception and "2 added" in texts(at, "success")
    assert list(report_table(at)["status"]) == ["added", "added"]
    return fresh_kb


def hits(at):
    return next(d.value for d in at.dataframe if "dense #" in d.value.columns)


def cards(at) -> list[str]:
    return [h.value for h in at.html if 'class="chunk-card"' in h.value]


def test_debugger_hits_and_cards_show_the_page_and_the_slide(located_kb):
    at = app_at("pages/debugger.py", q=PDF_QUERY, return_n="2")
    frame = hits(at)
    top = frame.iloc[0]
    assert top["evidenceKey"].startswith("catalogue.pdf#chunk-") and top["where"] == "p. 2", frame
    assert set(frame["where"]) <= {"p. 1", "p. 2", "pp. 1–2", "slide 1", "slide 2", "slide 3"}
    chunk = top["evidenceKey"].split("#chunk-")[1]
    assert f"catalogue.pdf #{chunk} p. 2" in cards(at)[0] and "Alert042" in cards(at)[0]

    at = app_at("pages/debugger.py", q=DECK_QUERY, return_n="2")
    top = hits(at).iloc[0]
    assert top["evidenceKey"] == "incident.pptx#chunk-1" and top["where"] == "slide 2"
    assert "incident.pptx #1 slide 2" in cards(at)[0]


def test_chat_citation_chips_name_the_page_and_the_slide(located_kb):
    at = app_at("pages/chat.py")
    ask(at, "What is the threshold and runbook of Alert042?")
    (answer,) = assistants(at)
    assert "[catalogue.pdf#chunk-" in texts(answer)
    chips = popover_labels(at)
    pdf = [c for c in chips if c.startswith("catalogue.pdf#chunk-")]
    assert pdf and all(c.endswith((" p. 1", " p. 2", " pp. 1–2")) for c in pdf), chips
    assert any(c.endswith(" p. 2") for c in pdf), chips
    ask(at, "When was the rollback started in the incident timeline?")
    chips = popover_labels(at)
    # the deck's chunks 0 and 1 both match and touch: one block (rag.merge), cited by its key; its chip names the
    # best hit's slide and opens the block
    assert "incident.pptx#chunk-0..1 slide 2" in chips, chips
    (popover,) = [p for p in at.get("popover") if p.proto.popover.label == "incident.pptx#chunk-0..1 slide 2"]
    assert any('data-key="incident.pptx#chunk-0..1"' in h.value for h in popover.get("html"))


def test_chunk_preview_shows_the_pages_and_slides_of_an_indexed_pdf_and_deck(located_kb):
    at = app_at("pages/chunk_preview.py")
    at.selectbox(key="cp.doc").set_value("catalogue.pdf").run()
    assert not at.exception and "Structure: 2 pages with text" in texts(at, "caption")
    shown = cards(at)
    assert "#0 p. 1" in shown[0] and any(" p. 2" in c for c in shown)
    at.selectbox(key="cp.doc").set_value("incident.pptx").run()
    assert not at.exception and "Structure: 3 slides" in texts(at, "caption")
    assert ["slide 1" in c for c in cards(at)] == [True, False, False]
    assert ["#2 slide 3" in c for c in cards(at)] == [False, False, True]


def test_pages_and_slides_in_chinese(located_kb):
    at = app_at("pages/debugger.py", q=PDF_QUERY, return_n="2", lang="zh")
    top = hits(at).iloc[0]
    assert top["evidenceKey"].startswith("catalogue.pdf#chunk-") and top["where"] == "第 2 页"
    assert "第 2 页" in cards(at)[0] and " p. 2" not in cards(at)[0]
    at = app_at("pages/chat.py", lang="zh")
    ask(at, "When was the rollback started in the incident timeline?")
    assert "incident.pptx#chunk-0..1 第 2 张幻灯片" in popover_labels(at), popover_labels(at)  # a merged block


@pytest.mark.slow  # runs OCR
def test_chunk_preview_says_which_pages_were_read_by_ocr(kb):
    from rag_core.loaders import ocr_available
    from tests.loaders.samples import CJK_FONT, mixed_pdf, render_page

    if not (ocr_available() and CJK_FONT.is_file()):
        pytest.skip('needs the OCR extra (pip install ".[ocr]") and the Noto CJK font')
    scan = render_page(("Rotate the TLS certificates every 90 days", "证书每九十天轮换一次"), (900, 240), 30)
    at = app_at("pages/chunk_preview.py")
    at.segmented_control(key="cp.source").set_value("Upload a file").run()
    at.file_uploader(key="cp.upload").set_value(("mixed.pdf", mixed_pdf("Page one has a text layer.", scan),
                                                 "application/pdf")).run()
    assert not at.exception
    assert "Structure: 2 pages with text · OCR'd page 2" in texts(at, "caption")
    assert "#0 pp. 1–2, OCR" in cards(at)[0] and "TLS" in cards(at)[0]
    assert not at.get("progress")  # the OCR bar is gone once the document is read
