"""`/v1/chat/completions` and `/v1/models` with the real `openai` SDK against a real uvicorn: a model is a knowledge
base, the agent answers (offline without a chat key, or with its own model and tools), citations come in the text
and in an extra field, streaming ends with `data: [DONE]`, errors have OpenAI's shape, the token is required."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from rag_core.citations import extract_citations
from rag_core.tokens import TOKENIZER, count_tokens
from tests.servers.chat import USAGE, Completion, OpenAIChatServer, tool_call
from tests.service import live
from tests.service.conftest import CHAT_KEY, model_settings, serve

TOKEN = "tok-SECRET-openai-5e2a8c41"
QUESTION = "What should I do when the disk is full?"


@pytest.fixture(scope="module")
def guarded(kb) -> Iterator[live.LiveServer]:
    server = serve(kb, token=TOKEN)  # no chat key: the offline, extractive agent answers
    yield server
    server.stop()


@pytest.fixture
def client(guarded: live.LiveServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{guarded.url}/v1", api_key=TOKEN, max_retries=0)


def test_models_are_the_knowledge_bases(client: openai.OpenAI, guarded: live.LiveServer, kb):
    models = client.models.list()
    # one model per knowledge base of the data folder (other tests of the session may have made some)
    listed = httpx.get(f"{guarded.url}/v1/kbs", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    names = [k["name"] for k in listed.json()]
    assert sorted(m.id for m in models.data) == sorted(names) and kb.settings.kb_name in names
    assert {m.owned_by for m in models.data} == {"rag-workbench"}
    assert client.models.retrieve(kb.settings.kb_name).id == kb.settings.kb_name


def test_a_completion_cites_evidence_keys_in_its_text_and_in_citations_and_is_rated_by_its_trace_id(
        client: openai.OpenAI, guarded: live.LiveServer, kb):
    completion = client.chat.completions.create(model=kb.settings.kb_name, messages=[
        {"role": "user", "content": "hello"}, {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": [{"type": "text", "text": QUESTION}]}])
    text = completion.choices[0].message.content
    extra = completion.model_extra
    assert completion.choices[0].finish_reason == "stop" and text.startswith("**Offline mode**")
    assert extra["citations"] and all(f"[{key}]" in text for key in extra["citations"])
    assert [e["evidence_key"] for e in extra["evidence"]] == extra["citations"]
    assert any(key.startswith("runbooks/disk_full.md#chunk-") for key in extra["citations"])
    assert extra["mode"] == "offline"
    # offline, no model counts tokens: the bundled tokenizer did, and the usage says so
    assert completion.usage.prompt_tokens == count_tokens(QUESTION) and completion.usage.completion_tokens == \
        count_tokens(text) and completion.usage.total_tokens == count_tokens(QUESTION) + count_tokens(text)
    assert completion.usage.model_extra["counted_by"] == TOKENIZER
    r = httpx.post(f"{guarded.url}/api/feedback", json={"traceId": extra["trace_id"], "rating": "down"},
                   headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    assert r.status_code == 200 and r.json()["data"]["question"] == QUESTION, r.text


def test_a_streamed_completion_is_chunks_then_done(client: openai.OpenAI, guarded: live.LiveServer, kb):
    chunks = list(client.chat.completions.create(model=kb.settings.kb_name, stream=True,
                                                  messages=[{"role": "user", "content": QUESTION}]))
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant" and len(chunks) > 3
    assert len({c.id for c in chunks}) == 1 and chunks[-1].choices[0].finish_reason == "stop"
    citations = chunks[-1].model_extra["citations"]
    assert citations and all(f"[{key}]" in text for key in citations)
    assert len(chunks[-1].model_extra["trace_id"]) == 32
    body = {"model": kb.settings.kb_name, "stream": True, "messages": [{"role": "user", "content": QUESTION}]}
    with httpx.stream("POST", f"{guarded.url}/v1/chat/completions", json=body,
                      headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as r:
        lines = [line for line in r.iter_lines() if line.startswith("data: ")]
    assert r.headers["content-type"].startswith("text/event-stream") and lines[-1] == "data: [DONE]"
    assert json.loads(lines[-2][6:])["citations"] == citations


def test_a_stream_reports_usage_in_a_last_chunk_when_asked(client: openai.OpenAI, kb):
    asked = list(client.chat.completions.create(model=kb.settings.kb_name, stream=True, messages=[
        {"role": "user", "content": QUESTION}], stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in asked if c.choices)
    assert asked[-1].choices == [] and all(c.usage is None for c in asked[:-1])
    assert asked[-1].usage.prompt_tokens == count_tokens(QUESTION)
    assert asked[-1].usage.completion_tokens == count_tokens(text) > 0
    plain = list(client.chat.completions.create(model=kb.settings.kb_name, stream=True,
                                                messages=[{"role": "user", "content": QUESTION}]))
    assert all(c.choices for c in plain) and all(c.usage is None for c in plain)


@pytest.mark.parametrize(("field", "value", "says"), [
    ("temperature", "hot", "temperature: Input should be a valid number"),
    ("temperature", 3, "temperature: Input should be less than or equal to 2"),
    ("top_p", -0.1, "top_p: Input should be greater than or equal to 0"),
    ("max_tokens", "many", "max_tokens: Input should be a valid integer"),
    ("stream", "yes", "stream: Input should be a valid boolean"),
    ("stop", 7, "stop"),
])
def test_sampling_options_of_the_wrong_type_or_range_are_400_naming_the_field(
        client: openai.OpenAI, kb, field: str, value: Any, says: str):
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model=kb.settings.kb_name, messages=[{"role": "user", "content": QUESTION}],
                                       extra_body={field: value})
    error = caught.value.response.json()["error"]
    assert error["param"] == field and says in error["message"] and error["type"] == "invalid_request_error"
    ok = client.chat.completions.create(model=kb.settings.kb_name, messages=[{"role": "user", "content": QUESTION}],
                                        temperature=0.2, top_p=1, max_tokens=50, seed=1, stop=["\n\n\n"])
    assert ok.choices[0].message.content


def test_simonw_llm_asks_and_gets_an_answer_with_its_usage(guarded: live.LiveServer, kb, tmp_path):
    # simonw's `llm` CLI, configured as its docs say for an OpenAI-compatible server (extra-openai-models.yaml)
    import os
    import subprocess
    import sys

    (tmp_path / "extra-openai-models.yaml").write_text(
        f"- model_id: {kb.settings.kb_name}\n  model_name: {kb.settings.kb_name}\n"
        f"  api_base: {guarded.url}/v1\n  api_key_name: workbench\n", encoding="utf-8")
    (tmp_path / "keys.json").write_text(json.dumps({"workbench": TOKEN}), encoding="utf-8")
    env = {**os.environ, "LLM_USER_PATH": str(tmp_path)}
    for flags in (["--no-stream"], []):
        run = subprocess.run([sys.executable, "-m", "llm", "-m", kb.settings.kb_name, *flags, QUESTION],
                             env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0 and "Offline mode" in run.stdout, run.stderr
    logged = subprocess.run([sys.executable, "-m", "llm", "logs", "--json", "-n", "2"], env=env,
                            capture_output=True, text=True, timeout=120)
    rows = json.loads(logged.stdout)
    assert logged.returncode == 0 and [r["input_tokens"] for r in rows] == [count_tokens(QUESTION)] * 2
    assert all(r["output_tokens"] > 0 for r in rows)


def test_simonw_llm_continues_a_conversation_and_the_follow_up_is_searched_with_it(guarded: live.LiveServer, kb,
                                                                                   tmp_path):
    # The report: `llm "How do I free disk space?"` then `llm -c "Which command shows it?"` was answered
    # from an unrelated on-call table; `-c` sends the earlier turns, which the follow-up's search now reads.
    import os
    import subprocess
    import sys

    (tmp_path / "extra-openai-models.yaml").write_text(
        f"- model_id: {kb.settings.kb_name}\n  model_name: {kb.settings.kb_name}\n"
        f"  api_base: {guarded.url}/v1\n  api_key_name: workbench\n", encoding="utf-8")
    (tmp_path / "keys.json").write_text(json.dumps({"workbench": TOKEN}), encoding="utf-8")
    env = {**os.environ, "LLM_USER_PATH": str(tmp_path)}
    answers = []
    for flags in (["How do I free disk space on a node?"], ["-c", "Which command shows it?"]):
        run = subprocess.run([sys.executable, "-m", "llm", "-m", kb.settings.kb_name, "--no-stream", *flags],
                             env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        answers.append(run.stdout)
    first, follow_up = (extract_citations(answer) for answer in answers)
    assert first[0].startswith("runbooks/disk_full.md#") and follow_up[0].startswith("runbooks/disk_full.md#")


def test_an_unknown_model_is_404_in_openais_shape(client: openai.OpenAI):
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(model="nope", messages=[{"role": "user", "content": QUESTION}])
    error = caught.value.response.json()["error"]
    assert error["code"] == "model_not_found" and error["type"] == "invalid_request_error"
    assert "There is no knowledge base 'nope'" in error["message"] and "GET /v1/models" in error["message"]
    assert "kb create" not in error["message"] and "python -m" not in error["message"]  # CLI advice is not a client's
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("nope")


@pytest.mark.parametrize(("body", "says"), [
    ({"messages": [{"role": "user", "content": "x"}]}, "model: is required"),
    ({"model": "biz", "messages": []}, "messages: List should have at least 1 item"),
    ({"model": "biz", "messages": [{"role": "robot", "content": "x"}]}, "messages.0.role: Input should be"),
    ({"model": "biz", "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]},
     "The last message must be the question"),
    ({"model": "biz", "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]},
     "`tools` is not supported"),
    ({"model": "biz", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
     "only text content is supported"),
])
def test_a_bad_body_is_400_in_openais_shape(guarded: live.LiveServer, body: dict[str, Any], says: str):
    r = httpx.post(f"{guarded.url}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {TOKEN}"},
                   timeout=60)
    error = r.json()["error"]
    assert r.status_code == 400 and error["type"] == "invalid_request_error" and says in error["message"], error


def test_the_token_is_required(guarded: live.LiveServer, kb):
    wrong = openai.OpenAI(base_url=f"{guarded.url}/v1", api_key="wrong-token-00000000", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.chat.completions.create(model=kb.settings.kb_name, messages=[{"role": "user", "content": QUESTION}])
    with pytest.raises(openai.AuthenticationError):
        wrong.models.list()


@pytest.fixture(scope="module")
def chat_model() -> Iterator[OpenAIChatServer]:
    yield from OpenAIChatServer(api_key=CHAT_KEY).serve()


@pytest.fixture(scope="module")
def model_server(kb, chat_model: OpenAIChatServer) -> Iterator[live.LiveServer]:
    server = serve(kb, env={"OPENAI_API_KEY": CHAT_KEY}, **model_settings(chat_model.base_url))
    yield server
    server.stop()


@pytest.fixture
def model_client(model_server: live.LiveServer, chat_model: OpenAIChatServer) -> openai.OpenAI:
    chat_model.reset()
    return openai.OpenAI(base_url=f"{model_server.url}/v1", api_key="unused", max_retries=0)


def test_with_a_chat_model_the_agent_runs_its_tools_on_the_clients_conversation(
        kb, chat_model: OpenAIChatServer, model_client: openai.OpenAI):
    def answer(request: Any) -> Completion:
        key = json.loads(request.json["messages"][-1]["content"])["results"][0]["document_id"]
        return Completion.say(f"Free space on the volume [{key}].")

    chat_model.reply(Completion.calls(tool_call("search_knowledge_base", {"query": "disk full"})), answer)
    chunks = list(model_client.chat.completions.create(model=kb.settings.kb_name, stream=True, messages=[
        {"role": "system", "content": "Answer in one sentence."}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello."}, {"role": "user", "content": QUESTION}]))
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    citations = chunks[-1].model_extra["citations"]
    assert text.startswith("Free space on the volume [") and citations and f"[{citations[0]}]" in text
    assert chunks[-1].usage is None  # not asked for
    chat_model.reply(Completion.calls(tool_call("search_knowledge_base", {"query": "disk full"})), answer)
    completion = model_client.chat.completions.create(model=kb.settings.kb_name, messages=[
        {"role": "user", "content": QUESTION}])
    assert completion.usage.model_extra["counted_by"] == "model"
    assert completion.usage.total_tokens == 2 * USAGE["total_tokens"]  # both model calls of the turn, as reported
    first = chat_model.chat_requests()[0]["messages"]
    assert first[0]["role"] == "system" and first[0]["content"].endswith("Answer in one sentence.")
    assert [(m["role"], m["content"]) for m in first[1:]] == [("user", "hi"), ("assistant", "Hello."),
                                                               ("user", QUESTION)]


def test_a_failed_turn_is_an_openai_error(kb, chat_model: OpenAIChatServer, model_client: openai.OpenAI,
                                          model_server: live.LiveServer):
    chat_model.reply(chat_model.server_error(500))
    with pytest.raises(openai.APIStatusError) as caught:
        model_client.chat.completions.create(model=kb.settings.kb_name, messages=[{"role": "user", "content": "x"}])
    error = caught.value.response.json()["error"]
    assert caught.value.status_code == 502 and error["type"] == "upstream_error" and error["message"]
    assert "HTTP 500" in error["message"] and chat_model.base_url.split("//")[1] not in error["message"]
    chat_model.reply(chat_model.server_error(500))
    body = {"model": kb.settings.kb_name, "stream": True, "messages": [{"role": "user", "content": "x"}]}
    with httpx.stream("POST", f"{model_server.url}/v1/chat/completions", json=body, timeout=60) as r:
        lines = [line for line in r.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]" and json.loads(lines[-2][6:])["error"]["type"] == "upstream_error"
