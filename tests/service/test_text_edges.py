"""Text at the service's edges (#21 items 5 and 6): text that is not text (a lone UTF-16 surrogate) is a 400 naming
the field, never a 500 with a traceback or an "unexpected error" stream; questions longer than a search."""

from __future__ import annotations

import dataclasses
import logging

import httpx
import pytest

from rag_core.loaders import load_bytes

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


def test_the_openai_compatible_route_refuses_one_in_its_error_shape(client: httpx.Client, errors_logged) -> None:
    body = '{"model": "biz", "messages": [{"role": "user", "content": "disk \\ud800"}]}'
    r = client.post("/v1/chat/completions", content=body, headers=JSON)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert one_line(error["message"]).startswith("messages[0].content: character 6 is a lone UTF-16 surrogate")
    r = client.post("/v1/chat/completions", content=body.replace("\\ud800", "full"), headers=JSON)
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"]  # the same body, as text, answers
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


# ------------------------------------------------------------------------------------------ upload names
NOTE = b"# Note\n\nThe original x.md, which nothing may replace unasked.\n"


def versions(client: httpx.Client, folder: str) -> dict[str, str]:
    docs = client.get("/v1/documents").json()
    return {d["doc_id"]: d["version"] for d in docs if d["doc_id"].startswith(folder + "/")}


@pytest.fixture
def edges(client: httpx.Client) -> str:
    """A folder of the shared knowledge base holding `edges/x.md`; emptied again afterwards."""
    r = client.post("/v1/documents", files={"files": ("x.md", NOTE)}, data={"folder": "edges"})
    assert r.status_code == 200, r.text
    yield "edges"
    for doc_id in versions(client, "edges"):
        assert client.delete(f"/v1/documents/{doc_id}").status_code == 200


@pytest.mark.parametrize("name", ["C:\\Windows\\x.md", "\\\\server\\share\\x.md"])
def test_a_windows_path_never_replaces_a_document_of_its_last_name(client: httpx.Client, edges: str, name: str) -> None:
    """python-multipart cuts `C:\\Windows\\x.md` to `x.md` (for IE6); the name as sent is refused in one line."""
    before = versions(client, edges)
    other = b"# Other\n\nSomething else entirely.\n"
    r = client.post("/v1/documents", files={"files": (name, other)}, data={"folder": edges})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "bad_name" and one_line(error["message"]).startswith(f"edges/{name}: a Windows path")
    assert error["data"]["reports"][0]["path"] == name
    r = client.post("/api/upload", files={"file": (name, other)}, data={"folder": edges})
    assert r.status_code == 400 and r.json()["data"]["fileName"] == name and "a Windows path" in r.json()["message"]
    assert versions(client, edges) == before  # x.md is the one it was
    chunks = client.get(f"/v1/documents/{edges}/x.md/chunks").json()["chunks"]
    assert "nothing may replace unasked" in chunks[0]["content"]


def test_look_alike_names_are_the_document_they_read_as(client: httpx.Client, edges: str) -> None:
    r = client.post("/v1/documents", files={"files": ("x\u200b.md", NOTE + b"More.\n")}, data={"folder": edges})
    [report] = r.json()["reports"]
    assert (report["path"], report["doc_id"], report["status"]) == ("x\u200b.md", "edges/x.md", "replaced")
    r = client.post("/api/upload", files={"file": ("sub\uff0fy.md", NOTE)}, data={"folder": edges})
    assert r.status_code == 200 and r.json()["data"]["docId"] == "edges/sub/y.md"  # the folder it reads as
    assert sorted(versions(client, edges)) == ["edges/sub/y.md", "edges/x.md"]
    # Two spellings of one document in one request are one document twice: refused before anything is written.
    r = client.post("/v1/documents", files=[("files", ("z.md", NOTE)), ("files", ("\ufeffz.md", NOTE))],
                    data={"folder": edges})
    assert r.status_code == 409 and "edges/z.md" in r.json()["error"]["message"]


def test_a_document_indexed_under_an_earlier_spelling_is_replaced_not_twinned(client: httpx.Client, kb,
                                                                               edges: str) -> None:
    """Earlier releases kept `（` and invisible characters in doc_ids: such a document keeps its id, and the
    same name uploaded again replaces it (instead of adding `手册(第二版).md` next to it)."""
    legacy = f"{edges}/手册\uff08第二版\uff09.md"
    doc = load_bytes(NOTE, "x.md")
    [report] = kb.ingestor.ingest_documents([dataclasses.replace(doc, doc_id=legacy)])  # as an earlier release wrote
    assert report.status == "added" and legacy in versions(client, edges)
    r = client.post("/api/upload", files={"file": ("手册\uff08第二版\uff09.md", NOTE + b"Second edition.\n")},
                    data={"folder": edges})
    assert r.status_code == 200 and (r.json()["data"]["docId"], r.json()["data"]["status"]) == (legacy, "replaced")
    assert set(versions(client, edges)) == {legacy, f"{edges}/x.md"}
    assert client.get(f"/v1/documents/{legacy}/chunks").status_code == 200  # reachable by the id it is listed under
