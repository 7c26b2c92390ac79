"""Every new format ingested into Milvus Lite end to end: the pages, slides and rows reach the stored chunks,
the hits, the agent's evidence and its citations; a bomb is refused and loses nothing; kept originals re-read."""

from __future__ import annotations

import pytest

from rag_core.agent.kb_tool import tool_payload
from rag_core.citations import cited_as
from rag_core.loaders import ocr_available
from tests.helpers import make_workbench
from tests.loaders.samples import (
    CJK_FONT,
    FIXTURES,
    GBK_CSV,
    deck,
    mixed_pdf,
    patch_package,
    render_page,
    table_pdf,
    workbook,
)

pytestmark = pytest.mark.milvus  # every test reads the module's knowledge base in Milvus Lite

OCR = ocr_available() and CJK_FONT.is_file()


@pytest.fixture(scope="module")
def wb(tmp_path_factory: pytest.TempPathFactory, local_embedder):
    workbench = make_workbench(tmp_path_factory.mktemp("formats") / "data", embedder=local_embedder)
    uploads = [
        ("wiki/pay.html", (FIXTURES / "confluence_runbook.html").read_bytes()),
        ("ops/alerts.xlsx", workbook()),
        ("ops/告警.csv", GBK_CSV.encode("gbk")),
        ("reviews/incident.pptx", deck()),
        ("catalogue.pdf", table_pdf()),
    ]
    if OCR:
        uploads.append(("scans/mixed.pdf", mixed_pdf("Page one has a text layer.",
                                                     render_page(("Rotate the TLS certificates every 90 days",
                                                                  "证书每九十天轮换一次"), (900, 240), 30))))
    workbench.reports = workbench.ingestor.ingest_uploads(uploads)
    yield workbench
    workbench.close()


def test_every_format_is_indexed_with_its_places(wb) -> None:
    assert [(r.doc_id, r.status) for r in wb.reports] == [(r.doc_id, "added") for r in wb.reports], wb.reports
    notes = {r.doc_id: r.notes for r in wb.reports}  # how each was read, as the CLI, the API and the pages show it
    assert notes["ops/alerts.xlsx"] == ("Q&A sheet: FAQ (问题 / 答案)",) and notes["reviews/incident.pptx"] == ()
    assert notes.get("scans/mixed.pdf", ("OCR'd page 2",)) == ("OCR'd page 2",)
    located = {d: {c.metadata.get("location") for c in wb.store.get_chunks(d)}
               for d in ("wiki/pay.html", "ops/alerts.xlsx", "ops/告警.csv", "reviews/incident.pptx", "catalogue.pdf")}
    assert located["wiki/pay.html"] == {None}  # no pages in a web page
    assert located["reviews/incident.pptx"] == {"slide 1", "slide 2", "slide 3"}
    assert {"p. 1", "p. 2"} <= located["catalogue.pdf"]
    assert "sheet FAQ, row 3" in located["ops/alerts.xlsx"] and located["ops/告警.csv"] == {"rows 2–3"}
    [faq] = [c for c in wb.store.get_chunks("ops/alerts.xlsx") if c.metadata["location"] == "sheet FAQ, row 3"]
    assert faq.title == "Q: How do I rotate the API keys?" and "revoke the old one" in faq.content
    assert faq.metadata["locationSpan"] == {"unit": "row", "first": 3, "last": 3, "sheet": "FAQ", "ocr": False,
                                            "label": "sheet FAQ, row 3"}


def test_a_hit_carries_its_page_to_the_evidence_and_the_citation(wb) -> None:
    result = wb.retriever.lookup("Alert042 threshold runbook", return_n=3)
    top = result.evidence[0]
    assert top.doc_id == "catalogue.pdf" and "Alert042" in top.content
    assert top.metadata["location"] == "p. 2"
    data = result.to_dict()
    assert data["evidence"][0]["location"] == "p. 2" and data["raw_hits"][0]["location"] == "p. 2"
    item = tool_payload(result)["results"][0]
    assert item["location"] == "p. 2" and item["document_id"] == top.evidence_key
    assert cited_as(item["source"], item["location"]) == "catalogue.pdf p. 2"


def test_a_qa_question_finds_its_answer(wb) -> None:
    hit = wb.retriever.lookup("如何重启支付服务", return_n=3).evidence[0]
    assert hit.doc_id == "ops/alerts.xlsx" and "systemctl restart pay-gateway" in hit.content
    assert hit.metadata["location"] == "sheet FAQ, rows 1–2"


@pytest.mark.slow  # runs OCR
@pytest.mark.skipif(not OCR, reason='needs the OCR extra (pip install ".[ocr]") and the Noto CJK font')
def test_ocr_pages_are_recorded_with_their_chunks(wb) -> None:
    chunks = wb.store.get_chunks("scans/mixed.pdf")
    spans = [c.metadata["locationSpan"] for c in chunks]
    assert any(s["ocr"] and s["first"] <= 2 <= s["last"] for s in spans)
    hit = wb.retriever.lookup("TLS certificates rotate 90 days", return_n=3).evidence[0]
    assert hit.doc_id == "scans/mixed.pdf" and hit.metadata["location"] == "pp. 1–2"  # one chunk: both pages


@pytest.mark.slow  # a bomb
def test_a_bomb_is_refused_and_loses_nothing(wb) -> None:
    before = wb.store.list_documents()
    laughs = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><sst/>'
    [report] = wb.ingestor.ingest_uploads([("ops/alerts.xlsx", patch_package(workbook(),
                                                                            add={"xl/sharedStrings.xml": laughs}))])
    assert report.status == "failed" and report.error_code == "undecodable" and "XML document type" in report.error
    assert wb.store.list_documents() == before


def test_reindex_rereads_the_kept_originals(wb) -> None:
    before = {c.metadata["location"] for c in wb.store.get_chunks("reviews/incident.pptx")}
    rows = {c.metadata["location"] for c in wb.store.get_chunks("ops/alerts.xlsx")}
    reports = wb.ingestor.reindex(["reviews/incident.pptx", "ops/告警.csv", "ops/alerts.xlsx"])
    assert [r.status for r in reports] == ["replaced", "replaced", "replaced"], reports
    assert reports[2].notes == ("Q&A sheet: FAQ (问题 / 答案)",)  # the workbook re-read from its kept original
    assert {c.metadata["location"] for c in wb.store.get_chunks("ops/alerts.xlsx")} == rows
    assert {c.metadata["location"] for c in wb.store.get_chunks("reviews/incident.pptx")} == before
