"""Retries and failures of the chat model, as the person sees them: real SDK, local servers.

The tests of a deadline wait it out and check what the person sees (the message, the attempts); none asserts how
long the turn took. A deadline that a part of the answer must still meet is a few seconds (ONCE), after a warm-up.
"""

from __future__ import annotations

import pytest

from rag_core.agent import ContentEvent, ErrorEvent, NoticeEvent, Session
from tests.contracts.remote import HANG, ONCE, arrived, frozen_clock
from tests.servers import Reply
from tests.servers.chat import Completion, OpenAIChatServer, paced, tool_call

from .conftest import KEY, make_agent, make_model, warm_up


def run(agent, question="What is P1?", session=None) -> list:
    return list(agent.run(question, session))


def assert_for_people(error: ErrorEvent) -> None:
    assert KEY not in error.message and "Traceback" not in error.message and "sk-" not in error.message
    assert "\n" not in error.message


def test_429_with_retry_after_then_success(kb, chat_server, sleeps) -> None:
    chat_server.reply(chat_server.rate_limited(retry_after="2"), Completion.say("Recovered."))
    events = run(make_agent(kb, make_model(chat_server, sleeps)))

    assert sleeps == [2.0]  # the server's Retry-After, longer than the 0.5 s backoff
    notice = events[0]
    assert isinstance(notice, NoticeEvent) and notice.kind == "retry"
    assert "HTTP 429" in notice.message and "retry 1 of 3 in 2.0 s" in notice.message
    assert events[-1].type == "done" and events[-1].text == "Recovered."
    assert len(chat_server.chat_requests()) == 2


def test_5xx_then_success_on_dashscope(kb, dashscope_server, sleeps) -> None:
    dashscope_server.reply(dashscope_server.server_error(500), dashscope_server.server_error(503),
                           Completion.say("好的。"))
    model = make_model(dashscope_server, sleeps, provider="dashscope", model="qwen-plus")
    events = run(make_agent(kb, model))
    assert sleeps == [0.5, 1.0]  # exponential backoff (jitter off in tests)
    assert [e.kind for e in events if isinstance(e, NoticeEvent)] == ["retry", "retry"]
    assert events[-1].text == "好的。"


def test_repeated_429_ends_the_turn_with_a_message(kb, chat_server, sleeps) -> None:
    chat_server.always(chat_server.rate_limited())  # bypasses the protocol handler: every request is refused
    session = Session()
    events = run(make_agent(kb, make_model(chat_server, sleeps, max_retries=2)), session=session)

    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.kind == "rate_limit"
    assert error.message == (f"The chat model at {chat_server.base_url} is rate limiting requests (HTTP 429), "
                             "still after 3 attempts. Wait a minute and try again.")
    assert_for_people(error)
    assert len(chat_server.requests) == 3 and sleeps == [0.5, 1.0]
    assert len(session) == 0  # a failed turn is not part of the history


def test_a_dead_server(kb, sleeps) -> None:
    with OpenAIChatServer() as gone:
        model = make_model(gone, sleeps)
        port = gone.port
    events = run(make_agent(kb, model))
    (error,) = events
    assert isinstance(error, ErrorEvent) and error.kind == "connection"
    assert error.message == (f"The chat model at http://127.0.0.1:{port}/v1 did not answer (connection refused). "
                             "Check chat.base-url or switch to offline mode (chat.provider = offline).")
    assert sleeps == []  # a refused connection is not retried
    assert_for_people(error)


def test_a_rejected_key_names_the_variable_not_the_key(kb) -> None:
    with OpenAIChatServer(api_key="sk-the-right-one-123456") as server:
        events = run(make_agent(kb, make_model(server)))
        error = events[-1]
        assert error.kind == "auth"
        assert error.message == (f"The chat model at {server.base_url} rejected the API key (HTTP 401). "
                                 "Check TEST_CHAT_KEY.")
    assert_for_people(error)


def test_an_unknown_model(kb, chat_server) -> None:
    events = run(make_agent(kb, make_model(chat_server, model="gpt-nope")))
    assert (
        events[-1].kind == "not_found" and "has no model 'gpt-nope' (HTTP 404). Check chat.model." in events[-1].message
    )


def test_a_timeout_is_retried_then_reported(kb, chat_server, sleeps) -> None:
    chat_server.always(Reply.json(200, {}, delay=HANG))
    events = run(make_agent(kb, make_model(chat_server, sleeps, timeout=0.3, max_retries=1, clock=frozen_clock)))
    error = events[-1]
    assert error.kind == "timeout" and arrived(chat_server, 2) and sleeps == [0.5]
    assert error.message == (f"The chat model at {chat_server.base_url} did not answer within 0.3 s (2 attempts). "
                             "Try again, or raise chat.timeout.")


def test_an_error_in_the_middle_of_the_stream_is_not_retried(kb, chat_server, sleeps) -> None:
    chat_server.reply(Completion.say("The first half", stream_error="The engine is overloaded."))
    events = run(make_agent(kb, make_model(chat_server, sleeps)))
    assert "".join(e.text for e in events if isinstance(e, ContentEvent)) == "The first half"
    error = events[-1]
    assert error.kind == "server" and sleeps == [] and len(chat_server.requests) == 1
    assert "reported an error during the answer: The engine is overloaded." in error.message


def test_a_bad_request_shows_the_servers_reason(kb, chat_server) -> None:
    chat_server.reply(chat_server.error(400, "This model's maximum context length is 8192 tokens.",
                                        code="context_length_exceeded"))
    error = run(make_agent(kb, make_model(chat_server)))[-1]
    assert error.kind == "bad_request"
    assert error.message == (f"The chat model at {chat_server.base_url} refused the request (HTTP 400: "
                             "This model's maximum context length is 8192 tokens.).")


def test_a_failure_after_a_tool_call_still_ends_with_one_error(kb, chat_server, sleeps) -> None:
    chat_server.reply(Completion.calls(tool_call("search_knowledge_base", {"query": "cpu"})),
                      chat_server.server_error(), chat_server.server_error())
    events = run(make_agent(kb, make_model(chat_server, sleeps, max_retries=1)))
    assert [e.type for e in events] == ["tool_call", "tool_result", "notice", "error"]
    assert events[-1].step == 2 and events[-1].kind == "server"


@pytest.mark.parametrize("flavour", ["openai", "dashscope"])
def test_the_key_never_appears_in_events_or_reprs(kb, chat_server, dashscope_server, flavour) -> None:
    server = chat_server if flavour == "openai" else dashscope_server
    server.reply(server.bad_key(KEY))
    model = make_model(server, model=server.models[0])
    agent = make_agent(kb, model)
    events = run(agent)
    assert all(KEY not in str(e.to_dict()) for e in events)
    assert KEY not in repr(model) and KEY not in agent.describe()


# ------------------------------------------------------------------ replies that are not the API's (#10 item 6)
SSE = {"Content-Type": "text/event-stream"}


@pytest.mark.parametrize("reply, what", [
    (Reply(200, b'data: {not json\n\n', SSE), "sent an event that is not JSON: '{not json'"),
    (Reply(200, b"<html><body>Sign in to continue</body></html>", {"Content-Type": "text/html; charset=utf-8"}),
     "answered with an HTML page (text/html) instead of an event stream: "
     "'<html><body>Sign in to continue</body></html>'"),
    (Reply.keepalives(3, every=0.05), "closed the answer's event stream without sending a single event"),
    (Reply.json(200, {"id": "x", "choices": []}),
     "answered with one JSON document (application/json) instead of an event stream (does it support stream=true?): "
     "'{\"id\": \"x\", \"choices\": []}'"),
])
def test_a_reply_that_is_not_an_event_stream_is_one_clear_error(kb, chat_server, sleeps, reply, what) -> None:
    chat_server.always(reply)
    events = run(make_agent(kb, make_model(chat_server, sleeps)))
    (error,) = events
    assert isinstance(error, ErrorEvent) and error.kind == "malformed"
    assert (
        error.message
        == f"The chat model at {chat_server.base_url} {what}. Check chat.base-url (it usually ends in /v1)."
    )
    assert len(chat_server.requests) == 1 and sleeps == []  # not retried: the server will answer the same
    assert_for_people(error)


def test_an_empty_answer_is_an_error_not_an_empty_success(kb, chat_server) -> None:
    chat_server.reply(Completion.say(""))  # a valid stream: a role chunk, then finish_reason "stop", no text
    session = Session()
    events = run(make_agent(kb, make_model(chat_server)), session=session)
    (error,) = events
    assert error.kind == "empty" and error.message == (
        f"test-chat via OpenAI-compatible ({chat_server.base_url}) sent an empty answer (no text and no tool call, "
        "finish reason 'stop'). Try again; if it keeps happening, check the model and chat.max-tokens.")
    assert len(session) == 0


# ------------------------------------------------------------------ deadlines (#10 item 5)
def test_keepalives_do_not_count_as_an_answer(kb, chat_server, sleeps) -> None:
    # SSE comments every 0.1 s keep every socket read short; the answer must still start within chat.timeout.
    # (10 s of them: were they an answer, the stream would end without an event, a "malformed" error)
    chat_server.always(Reply.keepalives(100, every=0.1))
    events = run(make_agent(kb, make_model(chat_server, sleeps, timeout=0.5, max_retries=1, clock=frozen_clock)))
    assert events[-1].kind == "timeout" and events[-1].message == (
        f"The chat model at {chat_server.base_url} did not answer within 0.5 s (2 attempts). Try again, or raise "
        "chat.timeout.")
    assert arrived(chat_server, 2) and sleeps == [0.5]


def test_an_answer_that_goes_silent_is_cut_off_and_not_retried(kb, chat_server, sleeps) -> None:
    # The first words come at once (the deadline they must meet is a few seconds), then 30 s of keep-alives.
    warm_up(chat_server)
    streamed = chat_server.render(Completion.say("First words, then nothing", parts=2), "test-chat", stream=True)
    role, first, *rest = [e + b"\n\n" for e in streamed.body.split(b"\n\n") if e]
    parts = ((0.0, role), (0.0, first), *((0.1, b": keep-alive\n\n"),) * 300, *((0.0, e) for e in rest))
    chat_server.always(Reply(200, b"".join(p for _, p in parts), streamed.headers, 0.0, parts))
    events = run(make_agent(kb, make_model(chat_server, sleeps, timeout=ONCE)))
    assert "".join(e.text for e in events if isinstance(e, ContentEvent)) == "First words, "
    assert events[-1].kind == "timeout" and events[-1].message == (
        f"The chat model at {chat_server.base_url} stopped sending its answer (nothing for {ONCE:g} s). Try again.")
    assert len(chat_server.requests) == 1 and sleeps == []


def test_a_steady_but_endless_answer_stops_at_the_turn_deadline(kb, chat_server, sleeps) -> None:
    warm_up(chat_server)  # the first words must come within the turn's deadline
    streamed = chat_server.render(Completion.say("word " * 300, parts=300), "test-chat", stream=True)
    chat_server.always(paced(streamed, every=0.1))  # never silent for long, but 30 s in all
    agent = make_agent(kb, make_model(chat_server, sleeps))
    agent.deadline = ONCE
    events = run(agent)
    assert any(isinstance(e, ContentEvent) for e in events)
    assert events[-1].kind == "timeout" and events[-1].message == (
        f"The chat model at {chat_server.base_url} did not finish its answer before the deadline (chat.deadline). "
        "Try again, or raise chat.deadline.")


def test_the_cli_exits_2_with_one_line_for_a_malformed_reply(kb, chat_server, capsys, monkeypatch) -> None:
    import argparse

    from rag_core.cli.chat import cmd_chat

    monkeypatch.setenv("TEST_CHAT_KEY", KEY)
    settings = kb.settings.with_overrides({"chat.provider": "openai", "chat.base-url": chat_server.base_url,
                                           "chat.model": "test-chat", "chat.api-key-env": "TEST_CHAT_KEY"})
    chat_server.always(Reply(200, b'data: {not json\n\n', SSE))
    args = argparse.Namespace(question=["hello"], offline=False, json=False)
    assert cmd_chat(args, settings, workbench=kb) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    (line,) = [x for x in err.splitlines() if x.startswith("error:")]
    assert line == (f"error: The chat model at {chat_server.base_url} sent an event that is not JSON: '{{not json'. "
                    "Check chat.base-url (it usually ends in /v1).")


def test_questions_from_stdin_exit_2_when_a_turn_failed(kb, chat_server, capsys, monkeypatch) -> None:
    import argparse
    import io

    from rag_core.cli.chat import cmd_chat

    monkeypatch.setenv("TEST_CHAT_KEY", KEY)
    monkeypatch.setattr("sys.stdin", io.StringIO("first\nsecond\n"))
    settings = kb.settings.with_overrides({"chat.provider": "openai", "chat.base-url": chat_server.base_url,
                                           "chat.model": "test-chat", "chat.api-key-env": "TEST_CHAT_KEY"})
    chat_server.reply(Completion.say(""), Completion.say("fine"))  # the first answer is empty
    assert cmd_chat(argparse.Namespace(question=[], offline=False, json=False), settings, workbench=kb) == 2
    out, err = capsys.readouterr()
    assert out == "fine\n" and "sent an empty answer" in err
