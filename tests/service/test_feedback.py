"""`/api/feedback` on a real uvicorn: a chat answer's trace id (or its session and turn) rates it; bad ratings and
unknown turns are clear 422s and 404s; GET lists turns newest first, filtered."""

from __future__ import annotations

import uuid

import httpx

from tests.service.live import sse_events


def _ask(client: httpx.Client, question: str, session: str | None = None) -> dict:
    r = client.post("/api/chat", json={"Id": session or uuid.uuid4().hex, "Question": question})
    assert r.status_code == 200 and r.json()["data"]["success"], r.text
    return r.json()["data"]


def test_a_chat_answer_is_recorded_and_rated_by_trace_id_or_by_session_and_turn(client: httpx.Client) -> None:
    session = uuid.uuid4().hex
    first = _ask(client, "How do I handle HighCPUUsage?", session)
    second = _ask(client, "磁盘空间不足怎么办？", session)
    assert len(first["traceId"]) == 32 and (first["turnIndex"], second["turnIndex"]) == (0, 1)

    r = client.post("/api/feedback", json={"traceId": second["traceId"], "rating": "down",
                                            "comment": "cited the wrong runbook"})
    assert r.status_code == 200, r.text
    rated = r.json()["data"]
    # the answer names its fields as the request and the /api routes do (camelCase)
    assert (rated["rating"], rated["comment"], rated["sessionId"], rated["turnIndex"]) == (
        "down", "cited the wrong runbook", session, 1)
    assert rated["lookups"][0]["evidenceKeys"] and rated["evidenceKeys"] and rated["knowledgeBases"]
    assert not any("_" in key for key in (*rated, *rated["lookups"][0]))
    r = client.post("/api/feedback", json={"sessionId": session, "turnIndex": 0, "rating": "👍"})
    assert r.status_code == 200 and r.json()["data"]["rating"] == "up"
    # rated again without a comment: the comment stays; an empty one removes it
    again = client.post("/api/feedback", json={"traceId": second["traceId"], "rating": "up"}).json()["data"]
    assert (again["rating"], again["comment"]) == ("up", "cited the wrong runbook")
    cleared = client.post("/api/feedback", json={"traceId": second["traceId"], "rating": "down", "comment": ""})
    assert cleared.json()["data"]["comment"] == ""
    client.post("/api/feedback", json={"traceId": second["traceId"], "rating": "down", "comment": "wrong runbook"})

    listed = client.get("/api/feedback", params={"rating": "down", "limit": 1000}).json()["data"]
    assert second["traceId"] in [t["traceId"] for t in listed]
    assert first["traceId"] not in [t["traceId"] for t in listed]


def test_the_stream_gives_the_trace_id_to_rate_by(client: httpx.Client) -> None:
    with client.stream("POST", "/api/chat_stream", json={"Question": "How do I handle HighCPUUsage?"}) as r:
        events = list(sse_events(r))
    (citations,) = [e for e in events if e["type"] == "citations"]
    r = client.post("/api/feedback", json={"traceId": citations["data"]["trace_id"], "rating": -1})
    assert r.status_code == 200 and r.json()["data"]["rating"] == "down"


def test_bad_ratings_and_unknown_turns_are_clear_errors(client: httpx.Client) -> None:
    r = client.post("/api/feedback", json={"traceId": "0" * 32, "rating": "down"})
    assert r.status_code == 404 and "No recorded turn has trace id" in r.json()["message"]
    r = client.post("/api/feedback", json={"sessionId": "nobody", "turnIndex": 3, "rating": "up"})
    assert r.status_code == 404 and "has no recorded turn 3" in r.json()["message"]
    r = client.post("/api/feedback", json={"traceId": "0" * 32, "rating": "meh"})
    assert r.status_code == 422 and 'rating must be "up" or "down"' in r.json()["message"]
    r = client.post("/api/feedback", json={"rating": "up"})
    assert r.status_code == 422 and "Name the turn" in r.json()["message"]
    r = client.post("/api/feedback", json={"sessionId": "s", "turnIndex": "first", "rating": "up"})
    assert r.status_code == 422 and "turnIndex" in r.json()["message"]
    r = client.get("/api/feedback", params={"rating": "sideways"})
    assert r.status_code == 422
    for name, value in (("since", "yesterday"), ("since", "2026-13-45"), ("until", "soon")):
        r = client.get("/api/feedback", params={name: value})
        assert r.status_code == 422 and r.json()["message"].startswith(f"{name}={value!r} is not a date or a time")
        assert "ISO 8601" in r.json()["message"]
    assert client.get("/api/feedback", params={"since": "2026-12-01", "until": "2026-12-01T08:30:00Z"}).status_code \
        == 200


def test_health_counts_the_spans_exported_and_lost(client: httpx.Client) -> None:
    tracing = client.get("/v1/health").json()["tracing"]
    assert tracing["exporting"] is False and tracing["endpoint"] is None
    assert {"exported", "failed", "dropped", "queued"} <= set(tracing)
