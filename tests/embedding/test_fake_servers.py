"""The fake servers themselves: scripting, request log, and fidelity to details the SDKs rely on."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import numpy as np
import openai
import pytest

from tests.servers import FakeServer, Reply
from tests.servers.embeddings import DashScopeEmbeddingServer, OpenAIEmbeddingServer, fake_vector


def post(url: str, payload: object, headers: dict[str, str] | None = None) -> tuple[int, object]:
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_script_then_handler_then_always() -> None:
    with FakeServer() as server:
        server.script(Reply.json(429, {"n": 1}), lambda req: Reply.json(201, {"path": req.path}))
        assert post(server.url + "/a", {}) == (429, {"n": 1})
        assert post(server.url + "/b", {}) == (201, {"path": "/b"})
        assert post(server.url + "/c", {})[0] == 404  # the base handler
        server.always(Reply.json(503, {}))
        assert post(server.url + "/d", {})[0] == 503
        assert post(server.url + "/e", {})[0] == 503
        assert [r.path for r in server.requests] == ["/a", "/b", "/c", "/d", "/e"]
        assert server.requests[0].json == {} and server.requests[0].header("content-type") == "application/json"
        server.reset()
        assert server.requests == [] and post(server.url + "/f", {})[0] == 404


def test_dashscope_server_enforces_the_documented_limits() -> None:
    with DashScopeEmbeddingServer(api_key="k") as server:
        url = server.base_url + "/services/embeddings/text-embedding/text-embedding"
        auth = {"Authorization": "Bearer k"}
        status, body = post(url, {"model": "text-embedding-v4", "input": {"texts": ["x"] * 11}}, auth)
        assert status == 400 and "should not be larger than 10" in body["message"]
        status, body = post(url, {"model": "text-embedding-v4", "input": {"texts": ["x"]}})
        assert (status, body["code"]) == (401, "InvalidApiKey")
        status, body = post(url, {"model": "text-embedding-v4", "input": {"texts": ["a", "b"]},
                                  "parameters": {"dimension": 128}}, auth)
        assert status == 200 and [e["text_index"] for e in body["output"]["embeddings"]] == [0, 1]
        assert len(body["output"]["embeddings"][1]["embedding"]) == 128 and "usage" in body


def test_openai_server_speaks_base64_as_the_sdk_requests_by_default() -> None:
    with OpenAIEmbeddingServer(api_key="k") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0, timeout=30)
        resp = client.embeddings.create(model="test-embed", input=["a", "b"])  # SDK asks for base64
        assert server.requests[0].json["encoding_format"] == "base64"
        np.testing.assert_allclose(resp.data[1].embedding, fake_vector("b", 16), rtol=1e-6)
        with pytest.raises(openai.NotFoundError):
            client.embeddings.create(model="missing", input="a")
