"""The same lookup with small to big on through every surface (issue 36): on the sample knowledge base (headed Markdown
runbooks), with evidence expanded to parent sections or neighbouring chunks and neighbouring hits merged, `search
--json`, `/v1/search` (real uvicorn), the MCP `search` tool (the official client over the service's `/mcp`) and the
agent's tool give the same blocks: the same keys, texts, matched keys and tokens. `/v1/explain` and the MCP
`explain` tool take the same options, and say a chunk inside a block is in the agent's context."""

from __future__ import annotations

import json
from contextlib import redirect_stdout
from io import StringIO
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from rag_core import cli
from rag_core.agent import knowledge_base_tool
from rag_core.identity import key_range
from rag_core.retrieval.options import lookup_overrides
from tests.service import live

QUERY = "how to free disk space"
MODES = {
    "parent": {"expand": "parent", "merge": True, "max_chunks_per_document": 5, "context_tokens": 3000},
    "neighbours": {"expand": "neighbours", "expand_neighbours": 1, "merge": True, "max_chunks_per_document": 5,
                   "context_tokens": 3000},
}


def flags(options: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for name, value in options.items():
        out += [f"--{name.replace('_', '-')}", ("on" if value else "off") if isinstance(value, bool) else str(value)]
    return out


def blocks_of(data: dict[str, Any]) -> list[tuple[str, list[str], int, str]]:
    """A lookup's blocks as `search --json` gives them: (key, matched, tokens, text)."""
    return [(b["key"], b["matched"], b["tokens"], b["content"]) for b in data["blocks"]]


def given(items: list[dict[str, Any]]) -> list[tuple[str, list[str], int, str]]:
    """What the agent reads, from `projection` or from the tool's `results`: (document_id, matched, tokens, text); a
    block of one hit lists none (the tool leaves `matched` out then)."""
    return [(i["document_id"], list(i.get("matched") or ()), i["tokens"], i["content"]) for i in items]


async def _mcp(url: str, name: str, arguments: dict[str, Any]) -> Any:
    async with httpx2.AsyncClient(timeout=120) as http, \
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        return await client.call_tool(name, arguments)


@pytest.fixture(scope="module", params=sorted(MODES))
def surfaces(request: pytest.FixtureRequest, kb, offline_server: live.LiveServer) -> dict[str, Any]:
    """The lookup of one mode through the CLI, the HTTP API, MCP and the agent's tool."""
    options = MODES[request.param]
    out = StringIO()  # capsys is per test: the module's lookups are made once
    with redirect_stdout(out):
        assert cli.main(["--data-dir", str(kb.settings.data_dir), "search", QUERY, *flags(options), "--json"]) == 0
    http = httpx.get(f"{offline_server.url}/v1/search", params={"query": QUERY, **{
        k: str(v).lower() if isinstance(v, bool) else v for k, v in options.items()}}, timeout=120)
    assert http.status_code == 200, http.text
    mcp = live.run_async(_mcp(offline_server.url, "search", {"query": QUERY, **options}))
    assert not mcp.is_error, mcp.content
    tool = knowledge_base_tool(kb.retriever, **lookup_overrides(options, kb.settings)).fn(QUERY)
    assert tool.ok
    return {"mode": request.param, "options": options, "cli": json.loads(out.getvalue()), "http": http.json(),
            "mcp": mcp.structured_content, "tool": tool}


def test_every_surface_gives_the_same_blocks(surfaces: dict[str, Any]) -> None:
    cli_, http, mcp, tool = surfaces["cli"], surfaces["http"], surfaces["mcp"], surfaces["tool"]
    assert blocks_of(cli_) == blocks_of(http) == blocks_of(mcp) and cli_["blocks"]
    assert given(cli_["projection"]) == given(http["projection"]) == given(mcp["projection"]) == \
        given(tool.data["results"])
    assert cli_["context"] == http["context"] == mcp["context"]
    context = cli_["context"]
    assert (context["expand"], context["merge"], context["budget"]) == (surfaces["mode"], True, 3000)
    assert context["tokens"] == sum(i["tokens"] for i in cli_["projection"]) <= 3000 and context["tokenizer"]
    assert [b["grew"] for b in cli_["blocks"]].count(surfaces["mode"]) >= 1  # the headed runbook's hits grew

    # Hits of one runbook that touch are one block: its key names their range, every hit's key stays listed, the
    # others are dropped as merged into it; the agent may cite the block or any hit it holds.
    merged = [b for b in cli_["blocks"] if len(b["matched"]) > 1]
    assert merged, "the disk runbook's neighbouring hits are merged"
    for block in merged:
        doc, first, last = key_range(block["key"])
        assert [key_range(k)[0] for k in block["matched"]] == [doc] * len(block["matched"])
        assert {first, last} <= {key_range(k)[1] for k in block["matched"]}
        statuses = {d["evidence_key"]: d["reason"] for d in cli_["dropped"]}
        assert all(statuses[k] == f"merged_into {block['key']}" for k in block["matched"][1:])
    citable = set(tool.evidence_keys)
    assert {b["key"] for b in cli_["blocks"]} >= {i["document_id"] for i in cli_["projection"]}
    assert citable == {k for i in tool.data["results"] for k in (i["document_id"], *i.get("matched", ()))}
    assert citable >= {k for b in merged for k in b["matched"]}


def test_explain_takes_the_options_over_http_and_mcp(surfaces: dict[str, Any],
                                                     offline_server: live.LiveServer) -> None:
    options, blocks = surfaces["options"], surfaces["cli"]["blocks"]
    merged = next(b for b in blocks if len(b["matched"]) > 1)
    # A chunk inside a block given to the agent that no hit matched: in the agent's context, not a hit itself.
    doc, _, _ = key_range(merged["key"])
    hits = {k for b in blocks for k in b["matched"]}
    inside = [f"{doc}#chunk-{i}" for b in blocks if key_range(b["key"])[0] == doc
              for i in range(b["range"][0], b["range"][1] + 1) if f"{doc}#chunk-{i}" not in hits]
    for expect, cause in ((merged["key"], "in_evidence"), (merged["matched"][-1], "in_evidence"),
                          *(((inside[0], "in_context"),) if inside else ())):
        http = httpx.get(f"{offline_server.url}/v1/explain", params={"query": QUERY, "expect": expect, **{
            k: str(v).lower() if isinstance(v, bool) else v for k, v in options.items()}}, timeout=300)
        assert http.status_code == 200, http.text
        mcp = live.run_async(_mcp(offline_server.url, "explain", {"query": QUERY, "expect": expect, **options}))
        assert not mcp.is_error, mcp.content
        for data in (http.json(), mcp.structured_content):
            assert data["params"]["expand"]["mode"] == surfaces["mode"] and data["expect"] == expect
            assert data["cause"] == cause and data["in_context"], (expect, data["verdict"])
            assert data["blocks"] == [i["document_id"] for i in surfaces["cli"]["projection"]]
        assert http.json()["verdict"] == mcp.structured_content["verdict"]
    assert inside or surfaces["mode"] == "neighbours"  # a parent section holds chunks no hit matched
