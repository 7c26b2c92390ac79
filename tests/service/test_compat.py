"""SuperBizAgent's /api contract over a real uvicorn: chat, the SSE chat stream, sessions, upload."""

from __future__ import annotations

import re
import uuid

import httpx

from tests.service.live import content_of, stream

KEY_RE = re.compile(r"\[([^\[\]]+#chunk-\d+(?:\.\.\d+)?)\]")  # a chunk, or a block of merged hits


def sid() -> str:
    return f"s-{uuid.uuid4().hex[:8]}"


def test_chat_answers_in_superbizagent_envelope_with_our_extras(client: httpx.Client):
    r = client.post("/api/chat", json={"Id": sid(), "Question": "How do I handle HighCPUUsage?"})
    assert r.status_code == 200
    body = r.json()
    assert body["code"] == 200 and body["message"] == "success"
    data = body["data"]
    assert data["success"] is True and data["errorMessage"] is None
    assert "Offline mode" in data["answer"]  # offline, and it says so
    cited = KEY_RE.findall(data["answer"])
    assert cited and data["citations"] == list(dict.fromkeys(cited))
    assert any(k.startswith("runbooks/cpu_high.md#chunk-") for k in data["citations"])
    [call] = data["toolCalls"]
    assert call["name"] == "search_knowledge_base" and call["ok"] is True
    assert set(data["citations"]) <= set(call["evidenceKeys"])
    assert {e["evidence_key"] for e in data["evidence"]} >= set(data["citations"])
    assert data["mode"] == "offline"


def test_chat_accepts_lower_case_fields_and_makes_a_session_when_none_is_given(client: httpx.Client):
    r = client.post("/api/chat", json={"question": "磁盘空间不足怎么办？"})
    data = r.json()["data"]
    assert data["success"] is True and data["sessionId"]
    info = client.get(f"/api/chat/session/{data['sessionId']}").json()["data"]
    assert info["messagePairCount"] == 1 and info["history"][0]["question"] == "磁盘空间不足怎么办？"


def test_empty_question_is_success_false_with_a_message(client: httpx.Client):
    for body in ({"Id": sid(), "Question": "   "}, {"Id": sid()}):
        r = client.post("/api/chat", json=body)
        assert r.status_code == 200
        data = r.json()["data"]
        assert data["success"] is False and data["answer"] is None and data["errorMessage"]


def test_bad_json_is_400_in_the_envelope(client: httpx.Client):
    r = client.post("/api/chat", content=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    body = r.json()
    assert body["code"] == 400 and "not valid JSON" in body["message"] and body["data"] is None
    r = client.post("/api/chat", json={"Id": sid(), "Question": {"a": 1}})
    assert r.status_code == 400 and r.json()["message"].startswith("Question:")


def test_chat_stream_content_then_citations_then_done(client: httpx.Client):
    session = sid()
    events = stream(client, "/api/chat_stream", {"Id": session, "Question": "What is the on-call escalation time?"})
    types = [e["type"] for e in events]
    assert types[0] == "session" and events[0]["data"]["id"] == session
    assert types[-2:] == ["citations", "done"] and events[-1] == {"type": "done", "data": None}
    assert "tool_call" in types and "tool_result" in types and "error" not in types
    result = next(e for e in events if e["type"] == "tool_result")["data"]
    assert result["lookup"]["evidence"], "the tool result carries the full lookup"
    text = content_of(events)
    assert text.startswith("**Offline mode**")
    citations = next(e for e in events if e["type"] == "citations")["data"]
    assert citations["citations"] and all(f"[{k}]" in text for k in citations["citations"])
    # the streamed turn is the session's history, as with /api/chat
    info = client.get(f"/api/chat/session/{session}").json()["data"]
    assert info["history"][0]["answer"] == text


def test_chat_stream_empty_question_is_one_error_then_done(client: httpx.Client):
    events = stream(client, "/api/chat_stream", {"Id": sid(), "Question": ""})
    assert [e["type"] for e in events] == ["session", "error", "done"]
    assert events[1]["data"] and events[1]["kind"] == "question"


def test_session_keeps_the_six_pair_window_and_clears(client: httpx.Client):
    session = sid()
    for n in range(7):
        assert client.post("/api/chat", json={"Id": session, "Question": f"disk full step {n}"}).json()["data"][
            "success"
        ]
    info = client.get(f"/api/chat/session/{session}").json()
    assert info["code"] == 200
    data = info["data"]
    assert data["sessionId"] == session and data["messagePairCount"] == 6 and isinstance(data["createTime"], int)
    assert [h["question"] for h in data["history"]] == [f"disk full step {n}" for n in range(1, 7)]
    r = client.post("/api/chat/clear", json={"Id": session})
    assert r.status_code == 200 and r.json()["code"] == 200
    assert client.get(f"/api/chat/session/{session}").json()["data"]["messagePairCount"] == 0


def test_sessions_belong_to_their_user(client: httpx.Client):
    session = sid()
    client.post("/api/chat", json={"Id": session, "Question": "cpu high", "UserId": "alice"})
    assert client.get(f"/api/chat/session/{session}", headers={"X-User-Id": "alice"}).status_code == 200
    r = client.get(f"/api/chat/session/{session}", headers={"X-User-Id": "bob"})
    assert r.status_code == 404 and r.json()["code"] == 404


def test_clear_and_info_errors(client: httpx.Client):
    r = client.post("/api/chat/clear", json={})
    assert r.status_code == 400 and r.json() == {"code": 400, "message": r.json()["message"], "data": None}
    assert "Id" in r.json()["message"]
    r = client.post("/api/chat/clear", json={"Id": "never-used"})
    assert r.status_code == 404 and "never-used" in r.json()["message"]
    r = client.get("/api/chat/session/never-used")
    assert r.status_code == 404 and r.json()["code"] == 404


def test_upload_gbk_file_is_indexed_and_searchable(client: httpx.Client, kb):
    text = "# 数据库连接池耗尽\n\n连接池耗尽时，先检查慢查询，再把 max_connections 临时调大到 500，并通知数据库值班。\n"
    data = text.encode("gbk")
    r = client.post(
        "/api/upload", files={"file": ("pool_gbk.md", data, "text/markdown")}, data={"folder": "uploads-gbk"}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["code"] == 200 and body["message"] == "success"
    info = body["data"]
    assert info["fileName"] == "pool_gbk.md" and info["fileSize"] == len(data)
    assert info["docId"] == info["filePath"] == "uploads-gbk/pool_gbk.md"
    assert info["status"] == "added" and info["chunks"] >= 1
    assert str(kb.settings.data_dir) not in r.text  # never a server path
    chunks = client.get("/v1/documents/uploads-gbk/pool_gbk.md/chunks").json()["chunks"]
    assert "max_connections 临时调大到 500" in chunks[0]["content"]  # decoded from GBK
    hits = client.get("/v1/search", params={"query": "连接池耗尽 max_connections", "mode": "bm25"}).json()
    assert hits["evidence"][0]["doc_id"] == "uploads-gbk/pool_gbk.md"
    again = client.post("/api/upload", files={"file": ("pool_gbk.md", data)}, data={"folder": "uploads-gbk"})
    assert again.json()["data"]["status"] == "unchanged"
    assert client.delete("/v1/documents/uploads-gbk/pool_gbk.md").status_code == 200


def test_upload_without_a_file_is_400(client: httpx.Client):
    r = client.post("/api/upload", data={"folder": "x"})
    assert r.status_code == 400 and r.json()["code"] == 400 and "file" in r.json()["message"]
