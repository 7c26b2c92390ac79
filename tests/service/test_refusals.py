"""Refused files and bodies get their own status, never a 200 that hides the failure."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator

import httpx
import pytest

from rag_core.errors import LoaderError
from rag_core.ingest import Ingestor
from rag_core.service.errors import REFUSAL_STATUS, from_rag_error, refusal_status
from tests.service import live
from tests.service.conftest import serve

LOADER_LIMIT = 4096  # bytes; the body limit is 20 KB


@pytest.fixture(scope="module")
def small(kb) -> Iterator[live.LiveServer]:
    """A server with small limits: files over 4 KB are refused by the loader, bodies over 20 KB by the server."""
    wb = dataclasses.replace(
        kb, ingestor=Ingestor(kb.store, kb.embedder, max_bytes=LOADER_LIMIT)
    )  # originals: the store's
    server = serve(wb, api__max_body_mb=0.02)
    yield server
    server.stop()


@pytest.fixture
def small_client(small: live.LiveServer) -> Iterator[httpx.Client]:
    yield from live.clients(small)


def upload(client: httpx.Client, name: str, data: bytes) -> httpx.Response:
    return client.post("/api/upload", files={"file": (name, data)}, data={"folder": "refused"})


REFUSED = [
    ("diagram.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(100), 415, "binary"),
    ("noise.txt", random.Random(1).randbytes(2048).replace(b"\x00", b"\x01"), 415, "binary"),
    ("tool.exe", b"MZ plain text pretending", 415, ""),
    ("weird.txt", b"abc \x81\x8d\x8f\x90\x9d", 422, "not UTF-8"),
    ("empty.md", b"", 422, "empty"),
    ("../escape.md", b"# hi\n\ntext", 400, ".."),
]


@pytest.mark.parametrize(("name", "data"), [r[:2] for r in REFUSED])
def test_a_refused_upload_is_never_a_200(client: httpx.Client, name: str, data: bytes):
    r = upload(client, name, data)
    assert 400 <= r.status_code < 500 and r.json()["code"] == r.status_code and name in r.json()["message"]


@pytest.mark.parametrize(("name", "data", "status", "reason"), REFUSED)
def test_refused_uploads_get_their_status(client: httpx.Client, name: str, data: bytes, status: int, reason: str):
    r = upload(client, name, data)
    assert r.status_code == status, r.text
    body = r.json()
    assert body["code"] == status and reason in body["message"]
    assert body["data"]["fileName"] == name and body["data"]["errorCode"]
    assert not [d for d in client.get("/v1/documents").json() if d["doc_id"].startswith("refused/")]


def test_file_over_the_loader_limit_is_413(small_client: httpx.Client):
    r = upload(small_client, "big.md", b"# big\n\n" + b"x" * (LOADER_LIMIT * 2))
    assert r.status_code == 413 and r.json()["data"]["errorCode"] == "too_large"
    assert "big.md" in r.json()["message"]


def test_body_over_the_limit_is_413_declared_or_streamed(small_client: httpx.Client):
    big = b"# big\n\n" + b"y" * 30_000
    r = upload(small_client, "huge.md", big)  # declares its Content-Length
    assert r.status_code == 413 and "api.max-body-mb" in r.json()["message"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while read
        for _ in range(40):
            yield b'{"Question": "' + b"z" * 1000 + b'"}'

    r = small_client.post("/api/chat", content=chunks(), headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and r.json()["code"] == 413
    r = small_client.post("/v1/documents", files={"files": ("huge.md", big)})
    assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_large"
    assert small_client.get("/v1/health").status_code == 200  # the server is fine afterwards


def test_every_refusal_code_maps_to_a_client_error():
    assert refusal_status("") == 422
    for code, status in REFUSAL_STATUS.items():
        assert 400 <= status < 500
        exc = LoaderError("x.md: refused")
        exc.code = code  # type: ignore[attr-defined]
        err = from_rag_error(exc)
        assert (err.status, err.code) == (status, code)
