"""The new formats through the HTTP API: an .xlsx and a deck upload with their notes and locations; an image without
the OCR extra, a file too slow to read and a bomb each get their status and one line, and nothing is indexed."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator

import httpx
import pytest

from rag_core.errors import LOADER_ERROR_CODES
from rag_core.ingest import Ingestor
from rag_core.loaders import LoadOptions
from rag_core.service.errors import REFUSAL_STATUS
from tests.loaders.samples import deck, patch_package, workbook
from tests.service import live
from tests.service.conftest import serve

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x02\x00\x00\x00" + bytes(40)


@pytest.fixture(scope="module")
def slow(kb) -> Iterator[live.LiveServer]:
    """A server whose loader may take no time at all (loader.max-seconds = 0): every slide is too late."""
    ingestor = Ingestor(kb.store, kb.embedder, load_options=LoadOptions(max_seconds=0.0))
    server = serve(dataclasses.replace(kb, ingestor=ingestor))
    yield server
    server.stop()


def documents(client: httpx.Client, folder: str) -> list[str]:
    return [d["doc_id"] for d in client.get("/v1/documents").json() if d["doc_id"].startswith(folder + "/")]


def test_an_xlsx_upload_is_indexed_with_its_sheets_and_notes(client: httpx.Client) -> None:
    try:
        r = client.post("/api/upload", files={"file": ("alerts.xlsx", workbook())}, data={"folder": "formats"})
        assert r.status_code == 200, r.text
        data = r.json()["data"]
        assert data["docId"] == "formats/alerts.xlsx" and data["status"] == "added"
        assert data["notes"] == ["Q&A sheet: FAQ (问题 / 答案)"]
        found = client.get("/v1/search", params={"query": "How do I rotate the API keys", "doc_id": data["docId"]})
        hit = found.json()["evidence"][0]
        assert hit["location"] == "sheet FAQ, row 3" and hit["cited_as"] == "formats/alerts.xlsx sheet FAQ, row 3"
        r = client.post("/v1/documents", files=[("files", ("incident.pptx", deck()))], data={"folder": "formats"})
        assert r.status_code == 200 and r.json()["reports"][0]["status"] == "added", r.text
        assert r.json()["reports"][0]["notes"] == []
    finally:  # the session's knowledge base is shared: leave it as it was
        for doc_id in documents(client, "formats"):
            client.delete(f"/v1/documents/{doc_id}")


def test_refusals_get_their_status_and_lose_nothing(client: httpx.Client, slow: live.LiveServer,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)  # as without the extra; the server is in process
    r = client.post("/api/upload", files={"file": ("scan.png", PNG)}, data={"folder": "refused"})
    assert r.status_code == 415 and r.json()["data"]["errorCode"] == "needs_ocr", r.text
    assert 'pip install ".[ocr]"' in r.json()["message"] and "\n" not in r.json()["message"]
    bomb = patch_package(workbook(), add={"xl/sharedStrings.xml": b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a '
                                                                   b'"aaaa">]><sst/>'})
    r = client.post("/v1/documents", files=[("files", ("bomb.xlsx", bomb))], data={"folder": "refused"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "undecodable" and "XML" in r.json()["error"]["message"]
    with httpx.Client(base_url=slow.url, timeout=30) as slow_client:
        r = slow_client.post("/api/upload", files={"file": ("deck.pptx", deck())}, data={"folder": "refused"})
    assert r.status_code == 413 and r.json()["data"]["errorCode"] == "too_slow", r.text
    assert "loader.max-seconds" in r.json()["message"]
    assert documents(client, "refused") == []


def test_every_loader_refusal_has_a_status() -> None:
    assert set(LOADER_ERROR_CODES) == set(REFUSAL_STATUS)
