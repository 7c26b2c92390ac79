"""`/mcp` on the service: the MCP server over streamable HTTP, reached with the SDK's own client on a real uvicorn,
behind the service's token and Origin check. Its tools answer what the /v1 routes answer (the same objects as the
CLI's --json); bad arguments are one-line tool errors and the server keeps serving."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.service import live
from tests.service.conftest import serve

TOKEN = "tok-SECRET-mcp-7c1d93e2"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def guarded(kb) -> Iterator[live.LiveServer]:
    server = serve(kb, token=TOKEN)
    yield server
    server.stop()


def without_timings(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "timings"}


async def session(url: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any]]:
    """One MCP connection: the tool names, then each call's result."""
    async with httpx2.AsyncClient(headers=AUTH, timeout=60) as http, \
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        return names, [await client.call_tool(name, arguments) for name, arguments in calls]


def test_the_tools_answer_what_the_v1_routes_answer(guarded: live.LiveServer):
    query = {"query": "disk space cleanup", "retrieve_k": 10, "return_n": 3, "mode": "hybrid"}
    names, (search, chunks, kbs, unknown_kb, bad, misspelt, docs) = live.run_async(session(guarded.url, [
        ("search", query),
        ("read_document_chunks", {"doc_id": "runbooks/disk_full.md"}),
        ("list_knowledge_bases", {}),
        ("search", {"query": "disk", "kb": "nope"}),
        ("search", {"query": "disk", "retrieve_k": "many"}),
        ("search", {"query": "disk", "retrieveK": 3}),
        ("list_documents", {}),  # still serving after the refusals
    ]))
    assert names == ["search", "explain", "list_documents", "read_document_chunks", "list_knowledge_bases"]
    v1 = httpx.get(f"{guarded.url}/v1/search", params=query, headers=AUTH, timeout=60).json()
    assert not search.is_error and without_timings(search.structured_content) == without_timings(v1)
    assert chunks.structured_content == httpx.get(f"{guarded.url}/v1/documents/runbooks/disk_full.md/chunks",
                                                  headers=AUTH, timeout=60).json()
    assert kbs.structured_content["items"] == httpx.get(f"{guarded.url}/v1/kbs", headers=AUTH, timeout=60).json()
    for refused, starts in ((unknown_kb, "There is no knowledge base 'nope'"),
                            (bad, "search: retrieve_k: Input should be a valid integer"),
                            (misspelt, "search: unknown argument 'retrieveK'; it takes query, kb, history, "
                                       "retrieve_k")):
        text = refused.content[0].text
        assert refused.is_error and text.startswith(starts) and "\n" not in text, text
    assert not docs.is_error and {d["doc_id"] for d in docs.structured_content["items"]} >= {"runbooks/disk_full.md"}


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong-token-000000"}])
def test_no_token_is_401(guarded: live.LiveServer, headers: dict[str, str]):
    r = httpx.post(f"{guarded.url}/mcp", headers={**headers, "Accept": "application/json, text/event-stream"},
                   json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=60)
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"


def test_a_page_on_another_site_is_refused(guarded: live.LiveServer):
    r = httpx.post(f"{guarded.url}/mcp", headers={**AUTH, "Origin": "http://evil.example.test",
                                                  "Accept": "application/json, text/event-stream"},
                   json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=60)
    assert r.status_code == 403 and r.json()["error"]["code"] == "origin_not_allowed"


def test_every_tool_takes_kb_and_search_and_explain_take_the_v1_routes_parameters(guarded: live.LiveServer):
    async def tools() -> dict[str, Any]:
        async with httpx2.AsyncClient(headers=AUTH, timeout=60) as http, \
                Client(streamable_http_client(f"{guarded.url}/mcp", http_client=http)) as client:
            return {t.name: t.input_schema for t in (await client.list_tools()).tools}

    schemas = live.run_async(tools())
    assert all("kb" in s["properties"] for s in schemas.values()), {n: list(s["properties"]) for n, s in
                                                                     schemas.items()}
    paths = httpx.get(f"{guarded.url}/openapi.json", headers=AUTH, timeout=60).json()["paths"]
    for tool, route in (("search", "/v1/search"), ("explain", "/v1/explain")):
        route_params = {p["name"] for p in paths[route]["get"]["parameters"]}
        assert {"query", "retrieve_k", "return_n"} <= set(schemas[tool]["properties"]), tool
        assert set(schemas[tool]["properties"]) - {"kb"} <= route_params, (tool, route_params)


def test_tools_are_described_without_code_indentation_and_marked_read_only(guarded: live.LiveServer):
    async def tools() -> list[Any]:
        async with httpx2.AsyncClient(headers=AUTH, timeout=60) as http, \
                Client(streamable_http_client(f"{guarded.url}/mcp", http_client=http)) as client:
            return list((await client.list_tools()).tools)

    listed = live.run_async(tools())
    assert len(listed) == 5
    for tool in listed:
        assert "\n " not in tool.description and tool.description == tool.description.strip(), tool.name
        assert tool.annotations.read_only_hint is True and tool.annotations.destructive_hint is False, tool.name


def test_get_on_mcp_is_405_not_a_stream_that_sends_nothing(guarded: live.LiveServer):
    r = httpx.get(f"{guarded.url}/mcp", headers={**AUTH, "Accept": "text/event-stream"}, timeout=60)
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    assert "stateless" in r.json()["error"]["message"]
