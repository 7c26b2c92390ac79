"""One conversation through every surface (issue 35): a follow-up question is searched as the same standalone question
with the same evidence whether it is asked in a session of `/api/chat` or `/api/chat_stream`, sent as `messages` to
`/v1/chat/completions` (the official openai SDK, streamed and not), given as `history` to the MCP `search` tool (the
SDK's client) and `/v1/search`, as `search --history FILE` on the command line, or typed into the chat page (AppTest).

The reference is the `/api/chat` session (offline agent over the sample knowledge base); the surfaces that are handed
the conversation get the exact answer the agent gave there, so every one sees the same conversation."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from rag_core import cli
from tests.service import live

REPO = Path(__file__).resolve().parents[2]
# (first question, follow-up, a topic word of the first that the rewritten follow-up borrows)
CONVERSATIONS = {
    "en": ("How do I free disk space on a node?", "Which command shows it?", "disk"),
    "zh": ("磁盘使用率超过 90% 怎么办？", "它的第一步是什么？", "磁盘"),
}


def evidence_keys(lookup: dict[str, Any]) -> list[str]:
    return [e["evidence_key"] for e in lookup["evidence"]]


@pytest.fixture(scope="module", params=sorted(CONVERSATIONS))
def reference(request: pytest.FixtureRequest, offline_server: live.LiveServer) -> dict[str, Any]:
    """Two turns of one `/api/chat` session: the first answer, and the follow-up's rewrite and evidence."""
    first, follow_up, topic = CONVERSATIONS[request.param]
    with httpx.Client(base_url=offline_server.url, timeout=120) as client:
        one = client.post("/api/chat", json={"Question": first}).json()["data"]
        two = client.post("/api/chat", json={"Id": one["sessionId"], "Question": follow_up}).json()["data"]
    assert one["success"] and two["success"] and two["sessionId"] == one["sessionId"]
    assert [t["rewrite"] for t in one["toolCalls"]] == [None]  # the first question has nothing before it
    (call,) = two["toolCalls"]
    rewrite = call["rewrite"]
    assert rewrite["outcome"] == "rewritten" and rewrite["by"] == "offline" and rewrite["original"] == follow_up
    assert rewrite["searched"].startswith(follow_up) and topic in rewrite["searched"] and rewrite["turns"] == 2
    keys = [e["evidence_key"] for e in two["evidence"]]
    assert keys
    return {"first": first, "answer": one["answer"], "follow_up": follow_up, "rewrite": rewrite, "keys": keys,
            "history": [{"role": "user", "content": first}, {"role": "assistant", "content": one["answer"]}]}


def test_chat_stream_rewrites_the_second_turn_of_a_session(reference: dict[str, Any],
                                                           offline_server: live.LiveServer):
    with httpx.Client(base_url=offline_server.url, timeout=120) as client:
        one = live.stream(client, "/api/chat_stream", {"Question": reference["first"]})
        session = next(e["data"]["id"] for e in one if e["type"] == "session")
        two = live.stream(client, "/api/chat_stream", {"Id": session, "Question": reference["follow_up"]})
    assert live.content_of(one) == reference["answer"]
    (first,) = [e["data"]["lookup"] for e in one if e["type"] == "tool_result"]
    (lookup,) = [e["data"]["lookup"] for e in two if e["type"] == "tool_result"]
    assert first["rewrite"] is None
    assert lookup["rewrite"] == reference["rewrite"] and evidence_keys(lookup) == reference["keys"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_chat_completions_read_the_history_from_the_messages(reference: dict[str, Any],
                                                             offline_server: live.LiveServer, kb, stream: bool):
    client = openai.OpenAI(base_url=f"{offline_server.url}/v1", api_key="unused", max_retries=0, timeout=120)
    messages: Any = [*reference["history"], {"role": "user", "content": reference["follow_up"]}]
    if stream:
        chunks = list(client.chat.completions.create(model=kb.settings.kb_name, messages=messages, stream=True))
        trace_id = chunks[-1].model_extra["trace_id"]
    else:
        trace_id = client.chat.completions.create(model=kb.settings.kb_name, messages=messages).model_extra["trace_id"]
    (lookup,) = offline_server.service.turns.get(trace_id=trace_id).lookups  # the recorded turn keeps the rewrite
    assert lookup.rewrite == reference["rewrite"] and list(lookup.evidence_keys) == reference["keys"]


def test_mcp_search_and_v1_search_take_the_history(reference: dict[str, Any], offline_server: live.LiveServer):
    async def call() -> Any:
        async with httpx2.AsyncClient(timeout=120) as http, \
                Client(streamable_http_client(f"{offline_server.url}/mcp", http_client=http)) as client:
            return await client.call_tool("search", {"query": reference["follow_up"], "history": reference["history"]})

    searched = live.run_async(call())
    assert not searched.is_error, searched.content
    assert searched.structured_content["rewrite"] == reference["rewrite"]
    assert evidence_keys(searched.structured_content) == reference["keys"]
    history = [f"{m['role']}: {m['content']}" for m in reference["history"]]
    r = httpx.get(f"{offline_server.url}/v1/search", params=[("query", reference["follow_up"]),
                                                             *(("history", h) for h in history)], timeout=120)
    assert r.status_code == 200, r.text
    assert r.json()["rewrite"] == reference["rewrite"] and evidence_keys(r.json()) == reference["keys"]


def test_the_cli_reads_the_history_file(reference: dict[str, Any], kb, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]):
    history = tmp_path / "history.jsonl"
    history.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in reference["history"]), "utf-8")
    base = ["--data-dir", str(kb.settings.data_dir), "search", reference["follow_up"], "--history", str(history)]
    assert cli.main([*base, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["rewrite"] == reference["rewrite"] and evidence_keys(printed) == reference["keys"]
    assert cli.main(base) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"Searched as: {reference['rewrite']['searched']} (rewritten, offline; {reference['rewrite']['detail']})")


@pytest.fixture
def chat_page_env(monkeypatch: pytest.MonkeyPatch, kb) -> Iterator[None]:
    """The app over the service's knowledge base, with no chat key (offline, as the service)."""
    from ui.state import clear_workbench

    for var in ("DASHSCOPE_API_KEY", "OPENAI_API_KEY", "MILVUS_URI", "MILVUS_TOKEN",
                *(k for k in os.environ if k.startswith("RAG_"))):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RAG_DATA_DIR", str(kb.settings.data_dir))
    monkeypatch.chdir(REPO)
    yield
    clear_workbench()


def test_the_chat_page_rewrites_its_second_turn(reference: dict[str, Any], chat_page_env: None):
    from tests.ui.apptest_helpers import app_at

    at = app_at("pages/chat.py")
    for question in (reference["first"], reference["follow_up"]):
        at.chat_input(key="chat.input").set_value(question).run()
        assert not at.exception, at.exception
    (first, one), (second, two) = at.session_state["chat.turns"]
    assert (first, second) == (reference["first"], reference["follow_up"]) and one.text == reference["answer"]
    (lookup,) = [s.lookup for s in two.tools()]
    assert lookup["rewrite"] == reference["rewrite"] and evidence_keys(lookup) == reference["keys"]


def test_explain_takes_the_history_too(reference: dict[str, Any], offline_server: live.LiveServer):
    history = [f"{m['role']}: {m['content']}" for m in reference["history"]]
    r = httpx.get(f"{offline_server.url}/v1/explain", params=[
        ("query", reference["follow_up"]), ("expect", reference["keys"][0]), *(("history", h) for h in history)],
        timeout=120)
    assert r.status_code == 200, r.text
    explained = r.json()
    assert explained["rewrite"] == reference["rewrite"] and explained["evidence"] == reference["keys"]
    assert explained["retrieved"] and explained["query"] == reference["follow_up"]


def test_a_malformed_history_is_refused_in_one_line(client: httpx.Client, offline_server: live.LiveServer, kb,
                                                    tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    r = client.get("/v1/search", params=[("query", "Which command shows it?"), ("history", "user: disk full"),
                                         ("history", "the answer")])
    assert r.status_code == 400 and r.json()["error"]["message"] == (
        'history, turn 2: write it as "user: ..." or "assistant: ...".')

    async def call() -> Any:
        async with httpx2.AsyncClient(timeout=120) as http, \
                Client(streamable_http_client(f"{offline_server.url}/mcp", http_client=http)) as mcp:
            return await mcp.call_tool("search", {"query": "x", "history": [{"role": "robot", "content": "hi"}]})

    refused = live.run_async(call())
    assert refused.is_error and refused.content[0].text == \
        "history, turn 1: role must be user or assistant (got 'robot')."
    data = ["--data-dir", str(kb.settings.data_dir)]
    bad = tmp_path / "bad.txt"
    bad.write_text("user: disk full\n", "utf-8")
    (tmp_path / "bad.jsonl").write_text('{"role": "user", "content": "a"}\n{not json\n', "utf-8")
    for path, message in ((tmp_path / "missing.txt", "no such file."),
                          (tmp_path / "bad.jsonl", "line 2: not JSON (Expecting property name enclosed in double "
                                                   "quotes).")):
        assert cli.main([*data, "search", "x", "--history", str(path)]) != 0
        err = capsys.readouterr().err.strip()
        assert err == f"error: --history {path}{':' if 'line' not in message else ','} {message}", err
