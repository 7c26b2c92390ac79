"""Text at the service's edges (#21 items 5 and 6): text that is not text (a lone UTF-16 surrogate) is a 400 naming
the field, never a 500 with a traceback or an "unexpected error" stream; questions longer than a search."""

from __future__ import annotations

import logging

import httpx
import pytest

JSON = {"Content-Type": "application/json"}


@pytest.fixture
def errors_logged(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The ERROR records logged while a test runs (the uvicorn thread logs through the same handlers)."""
    caplog.set_level(logging.ERROR)
    return caplog.records


def one_line(message: str) -> str:
    assert "\n" not in message and "Traceback" not in message
    return message


def test_a_lone_surrogate_in_a_chat_question_is_a_400(client: httpx.Client, errors_logged) -> None:
    # Raw JSON: httpx would refuse to encode the string itself. `\ud800` is a valid JSON escape.
    body = '{"Id": "s1", "Question": "disk \\ud800"}'
    r = client.post("/api/chat", content=body, headers=JSON)
    assert r.status_code == 400, r.text
    answer = r.json()
    assert answer["code"] == 400 and answer["data"] is None
    assert one_line(answer["message"]).startswith("Question: character 6 is a lone UTF-16 surrogate (U+D800")

    r = client.post("/api/chat_stream", content=body, headers=JSON)
    assert r.status_code == 400 and r.headers["content-type"].startswith("application/json")
    assert r.json()["message"] == answer["message"]

    r = client.post("/api/chat/clear", content='{"Id": "\\udcff"}', headers=JSON)
    assert r.status_code == 400 and one_line(r.json()["message"]).startswith("Id: character 1 is the byte 0xFF")
    assert not errors_logged, [rec.getMessage() for rec in errors_logged]
    # The question was never run: no session was made for it.
    assert client.get("/api/chat/session/s1").status_code == 404


def test_nested_values_and_field_names_are_checked_too(client: httpx.Client, errors_logged) -> None:
    r = client.post("/v1/kbs", content='{"name": "edge_kb", "settings": {"embedding.model": "x\\udfff"}}',
                    headers=JSON)
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["code"] == "bad_request"
    assert one_line(error["message"]).startswith("settings.embedding.model: character 2 is a lone UTF-16 surrogate")
    r = client.post("/v1/kbs", content='{"name": "edge_kb", "settings": {"\\ud83d": 1}}', headers=JSON)
    assert r.status_code == 400 and "settings: the field name '\\ud83d'" in r.json()["error"]["message"]
    assert "edge_kb" not in {kb["name"] for kb in client.get("/v1/kbs").json()}
    # A pair is one character, not a problem.
    r = client.post("/api/chat", content='{"Question": "disk \\ud83d\\ude00"}', headers=JSON)
    assert r.status_code == 200 and r.json()["data"]["success"]
    assert not errors_logged, [rec.getMessage() for rec in errors_logged]


def test_query_strings_cannot_carry_one(client: httpx.Client) -> None:
    """Percent-escapes are decoded as UTF-8 with replacement characters: the bytes of a surrogate (CESU-8)
    become U+FFFD, a character, so the search runs."""
    r = client.get("/v1/search?query=disk%ED%A0%80")
    assert r.status_code == 200 and r.json()["query"] == "disk\ufffd\ufffd\ufffd"


def test_a_question_longer_than_a_search_is_answered_for_its_first_4000_characters(client: httpx.Client) -> None:
    """Questions take up to 8,000 characters, searches 4,000: offline mode searches for the question's first 4,000
    and says so, where it used to fail the turn with 'The query has 4999 characters; the limit is 4000'."""
    question = "What do I do when the disk is full? " * 150  # 5,400 characters
    r = client.post("/api/chat", json={"Question": question})
    data = r.json()["data"]
    assert r.status_code == 200 and data["success"] is True, data["errorMessage"]
    assert data["notices"] == ["The question has 5,399 characters; the knowledge base was searched for its first "
                               "4,000 (searches take at most 4,000)."]
    [call] = data["toolCalls"]
    assert call["ok"] and any(k.startswith("runbooks/disk_full.md#chunk-") for k in call["evidenceKeys"])

    r = client.post("/api/chat", json={"Question": "x" * 8001})
    assert r.json()["data"]["errorMessage"].startswith("The question has 8001 characters; the limit is 8000.")
    r = client.get("/v1/search", params={"query": "x" * 4001})  # a search itself is never shortened unasked
    assert r.status_code == 400 and "the limit is 4000" in r.json()["error"]["message"]
