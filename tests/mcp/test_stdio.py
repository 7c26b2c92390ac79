"""`python -m rag_core mcp`: the MCP server over stdio, spawned as a client such as Claude Desktop spawns it and
reached with the SDK's own client, on a data folder holding an indexed knowledge base. Its search and explain
answer exactly what `search --json` and `explain --json` print for the same arguments; bad arguments are
one-line tool errors and the server keeps serving."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from rag_core.cli import main
from rag_core.embedding.local import TEST_CACHE_ENV
from rag_core.store.lite.internals import FORBID_ENV
from tests.helpers import REPO, SAMPLE_KB
from tests.service.live import run_async

pytestmark = pytest.mark.milvus  # the server opens Milvus Lite: not in `make test-unit`

DOCS = ["runbooks/disk_full.md", "policies/oncall_zh.md"]
QUERY = ["disk space cleanup", "--retrieve-k", "10", "--return-n", "3", "--mode", "hybrid"]
ARGUMENTS = {"query": "disk space cleanup", "retrieve_k": 10, "return_n": 3, "mode": "hybrid"}
CROSS = "磁盘使用率超过 90% 怎么办？"  # a Chinese question with no Latin word: the English runbook is a stand-in
EXPECT = {"query": "How do I free disk space?", "expect": "kb/oncall_zh.md", "retrieve_k": 5, "return_n": 3}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp-stdio")
    assert main(["--data-dir", str(path), "ingest", *(str(SAMPLE_KB / d) for d in DOCS), "--prefix", "kb",
                 "--quiet"]) == 0
    return path


def cli_json(capsys: pytest.CaptureFixture[str], data: Path, *argv: str) -> dict[str, Any]:
    assert main(["--data-dir", str(data), *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


async def session(data: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any]]:
    # The client passes on only a few variables (PATH, HOME, ...): the tests' Milvus Lite mode goes explicitly.
    env = {k: os.environ[k] for k in ("RAG_MILVUS_LITE_MODE", "RAG_MILVUS_HOST_IDLE", FORBID_ENV, TEST_CACHE_ENV)
           if k in os.environ}
    server = StdioServerParameters(command=sys.executable, args=["-m", "rag_core", "--data-dir", str(data), "mcp"],
                                   env=env, cwd=REPO)
    async with Client(server) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        return names, [await client.call_tool(name, arguments) for name, arguments in calls]


def rounded(value: Any) -> Any:
    """Scores to 5 decimals: the server process embeds the query itself, the CLI here may read the tests' vector
    cache, and the two vectors can differ in their last bits."""
    if isinstance(value, float):
        return round(value, 5)
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value


def without_timings(value: dict[str, Any]) -> dict[str, Any]:
    return rounded({k: v for k, v in value.items() if k != "timings"})


def test_the_tools_over_stdio_answer_what_the_cli_prints(data: Path, capsys: pytest.CaptureFixture[str]):
    searched = cli_json(capsys, data, "search", *QUERY)  # before the server holds the Milvus Lite file
    explained = cli_json(capsys, data, "explain", EXPECT["query"], "--expect", EXPECT["expect"], "--retrieve-k", "5",
                         "--return-n", "3")
    documents = cli_json(capsys, data, "docs")
    crossed = {flag: cli_json(capsys, data, "search", CROSS, "--cross-language", flag) for flag in ("on", "off")}
    names, results = run_async(session(data, [
        ("search", ARGUMENTS),
        ("explain", EXPECT),
        ("list_documents", {}),
        ("read_document_chunks", {"doc_id": "kb/disk_full.md"}),
        ("list_knowledge_bases", {"kb": "biz"}),
        ("search", {"query": "disk", "kb": "nope"}),
        ("search", {"query": "disk", "return_n": 50, "retrieve_k": 10}),
        ("search", {"retrieve_k": 3}),
        ("read_document_chunks", {"doc_id": "kb/nope.md"}),
        ("no_such_tool", {}),
        ("search", {"query": "disk", "return_n": 1}),  # still serving
        ("search", {"query": CROSS, "cross_language": True}),
        ("search", {"query": CROSS, "cross_language": False}),
    ]))
    search, explain, docs, chunks, kbs, *refused, last, cross_on, cross_off = results
    assert names == ["search", "explain", "list_documents", "read_document_chunks", "list_knowledge_bases"]
    assert not search.is_error and without_timings(json.loads(search.content[0].text)) == without_timings(searched)
    assert without_timings(search.structured_content) == without_timings(searched)
    assert without_timings(explain.structured_content) == without_timings(explained)
    assert docs.structured_content["items"] == documents
    assert [c["evidence_key"] for c in chunks.structured_content["chunks"]][:2] == ["kb/disk_full.md#chunk-0",
                                                                                   "kb/disk_full.md#chunk-1"]
    assert [k["name"] for k in kbs.structured_content["items"]] == ["biz"]
    messages = [r.content[0].text for r in refused]
    assert all(r.is_error for r in refused) and not any("\n" in m for m in messages), messages
    assert messages[0].startswith("There is no knowledge base 'nope'")
    assert messages[1].startswith("return-n (50) cannot be larger than retrieve-k (10)")
    assert messages[2] == "search: query: is required."
    assert messages[3].startswith("No document 'kb/nope.md' in knowledge base 'biz'")
    assert messages[4] == "Unknown tool: no_such_tool"
    assert not last.is_error and len(last.structured_content["evidence"]) == 1
    # rag.cross-language reaches the lookup as the CLI's --cross-language does (on: the English runbook stands in)
    assert any(h["cross_language"] for h in crossed["on"]["raw_hits"])
    assert not any(h["cross_language"] for h in crossed["off"]["raw_hits"])
    for answer, flag in ((cross_on, "on"), (cross_off, "off")):
        assert without_timings(answer.structured_content) == without_timings(crossed[flag]), flag


def test_a_line_that_is_not_json_rpc_gets_a_json_rpc_error_and_the_server_reads_on(data: Path):
    # Written as a client would write them, one message per line; the SDK's transport alone answers none of the
    # bad ones, so a client waiting for request 3 would wait forever.
    import subprocess

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    lines = [json.dumps(init), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             "this is not json", "",
             '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search",'
             '"arguments":{"query":"\\ud800"}}}',
             '{"jsonrpc":"2.0","id":4,"method":42}', '[1, 2',
             json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})]
    proc = subprocess.Popen([sys.executable, "-m", "rag_core", "--data-dir", str(data), "mcp"], cwd=REPO, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:  # stdin stays open until every answer is read: at its end the server stops, dropping what still runs
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()
        answers = [json.loads(proc.stdout.readline()) for _ in range(6)]
    finally:
        proc.stdin.close()
        proc.wait(timeout=120)
    assert [a.get("id") for a in answers] == [1, None, 3, 4, None, 5]
    codes = {a.get("id"): a.get("error", {}).get("code") for a in answers}
    assert answers[1]["error"]["code"] == -32700 and answers[4]["error"]["code"] == -32700
    assert codes[3] == -32700 and "lone surrogate" in answers[2]["error"]["message"]
    assert codes[4] == -32600
    assert "search" in [t["name"] for t in answers[5]["result"]["tools"]]  # and it read on
