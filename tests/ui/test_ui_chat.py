"""Agent chat page (AppTest): offline answers with citations, a model behind a local OpenAI-compatible
server (the real `openai` SDK) with a visible tool call, errors shown as messages, clear conversation."""

import json
from urllib.parse import parse_qs

import pytest

from tests.servers.chat import Completion, OpenAIChatServer, tool_call
from tests.ui.apptest_helpers import app_at, texts

PAGE = "pages/chat.py"


def ask(at, question):
    at.chat_input(key="chat.input").set_value(question).run()
    assert not at.exception, at.exception


def assistants(at):
    return [m for m in at.chat_message if m.name == "assistant"]


def popover_labels(at):
    return [b.proto.popover.label for b in at.get("popover")]


def debugger_links(at):
    return [parse_qs(link.proto.query_string) for link in at.get("page_link") if "debugger" in link.proto.page]


def test_offline_answer_with_tool_call_evidence_and_citations(kb):
    at = app_at(PAGE)
    assert "**Offline**" in texts(at, "caption") and "Offline mode" in texts(at, "info")
    ask(at, "How do I free disk space when a node disk is full?")
    (answer,) = assistants(at)
    assert "[disk_full.md#chunk-" in texts(answer)
    (status,) = at.status
    assert status.label.startswith("🔎 Searched the knowledge base: “How do I free disk space")
    assert "evidence blocks" in status.label
    assert '"query"' in status.code[0].value  # the arguments
    evidence = status.dataframe[0].value
    assert list(evidence.columns) == ["evidenceKey", "score", "hit reasons", "content"]
    cited = popover_labels(at)
    assert cited and all(key in set(evidence["evidenceKey"]) for key in cited)
    assert any(key.startswith("disk_full.md#chunk-") for key in cited)
    (link,) = debugger_links(at)
    assert link["q"] == ["How do I free disk space when a node disk is full?"] and link["retrieve_k"] == ["20"]
    # the cited chunk opens in its chip
    assert any("chunk-card" in h.value for h in at.get("popover")[0].get("html"))


def test_history_is_kept_and_cleared(kb):
    at = app_at(PAGE)
    assert at.button(key="chat.clear").disabled
    ask(at, "CPU usage high")
    ask(at, "磁盘满了怎么办")
    assert [m.markdown[0].value for m in at.chat_message if m.name == "user"] == ["CPU usage high", "磁盘满了怎么办"]
    assert len(assistants(at)) == 2 and len(at.status) == 2
    at.switch_page("pages/home.py").run()
    at.switch_page(PAGE).run()
    assert len(assistants(at)) == 2  # kept for this browser session across pages
    at.button(key="chat.clear").click().run()
    assert not at.exception and not at.chat_message
    assert len(at.session_state["chat.session"]) == 0


@pytest.fixture
def chat_server(monkeypatch):
    with OpenAIChatServer() as server:
        monkeypatch.setenv("RAG_CHAT_PROVIDER", "openai")
        monkeypatch.setenv("RAG_CHAT_BASE_URL", server.base_url)
        monkeypatch.setenv("RAG_CHAT_MODEL", "test-chat")
        monkeypatch.setenv("RAG_CHAT_MAX_RETRIES", "0")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-chat-test")
        yield server


def first_key(request) -> str:
    tool = [m for m in request.json["messages"] if m["role"] == "tool"][-1]
    return json.loads(tool["content"])["results"][0]["document_id"]


def test_model_answer_streams_after_a_visible_tool_call(kb, chat_server):
    chat_server.reply(
        Completion.calls(tool_call("search_knowledge_base", {"query": "disk full cleanup"}, parts=4)),
        lambda req: Completion.say(f"Clean the systemd journal first [{first_key(req)}]. "
                                   "Never delete database files [made/up.md#chunk-9].", parts=6),
    )
    at = app_at(PAGE)
    assert "OpenAI-compatible" in texts(at, "caption") and "test-chat" in texts(at, "caption")
    assert not at.info
    ask(at, "The disk is full, what now?")
    (status,) = at.status
    assert "“disk full cleanup”" in status.label
    assert json.loads(status.code[0].value) == {"query": "disk full cleanup"}
    (answer,) = assistants(at)
    shown = texts(answer)
    assert "Clean the systemd journal first [disk_full.md#chunk-" in shown
    assert popover_labels(at) == [first_key_from(at)]
    assert "made/up.md#chunk-9" in texts(at, "warning")  # cited but never returned: flagged
    requests = chat_server.chat_requests()
    assert len(requests) == 2 and requests[0]["stream"] is True
    assert requests[1]["messages"][-1]["role"] == "tool"


def test_a_tool_call_whose_filter_matches_no_document_links_to_the_documents_metadata(kb):
    """A filter the model chose that matches no document: the warning names the Knowledge base page and links to
    it (not only the command line's `docs --json`)."""
    from rag_core.agent.turn import AssistantTurn, ToolStep
    from rag_core.scope import parse_scope

    lookup = kb.retriever.lookup("disk full", scope=parse_scope(["folder=nowhere/"])).to_dict()
    step = ToolStep("call-1", "search_knowledge_base", {"query": "disk full", "filter": ["folder=nowhere/"]}, "",
                    ok=True, lookup=lookup)
    at = app_at(PAGE)
    at.session_state["chat.turns"] = [("The disk is full, what now?", AssistantTurn(parts=[step, "Nothing found."]))]
    at.run()
    assert not at.exception, at.exception
    (status,) = at.status
    assert "matches no document" in texts(status, "warning") and "Knowledge base page" in texts(status, "warning")
    (link,) = [p for p in status.get("page_link") if "metadata" in p.proto.label]
    assert link.proto.page == "knowledge_base"


def first_key_from(at) -> str:
    return at.status[0].dataframe[0].value["evidenceKey"][0]


def test_model_failure_is_a_message_not_a_traceback(kb, chat_server):
    chat_server.reply(chat_server.server_error(500))
    at = app_at(PAGE)
    ask(at, "anything")
    assert "kept failing (HTTP 500)" in texts(at, "error")
    assert not at.exception
    assert len(at.session_state["chat.session"]) == 0  # a failed turn is not recorded


def test_bad_chat_settings_are_explained(kb, monkeypatch):
    monkeypatch.setenv("RAG_CHAT_PROVIDER", "openai")
    at = app_at(PAGE)
    assert "needs chat.model" in texts(at, "error")


def test_the_tool_call_shows_the_rerank_stage_and_its_failure(kb, monkeypatch):
    from rag_core.errors import RagError
    from tests.retrieval.fakes import ScriptedReranker

    model = ScriptedReranker(lambda q, d: float(len(d)))
    monkeypatch.setattr(kb.retriever, "reranker", model)
    at = app_at(PAGE)
    ask(at, "How do I free disk space when a node disk is full?")
    (status,) = at.status
    assert "reranked the top 20 with fake:scripted" in texts(status, "caption") and model.calls
    model.error = RagError("HTTP 503 from the rerank endpoint")
    ask(at, "What does HighCPUUsage mean?")
    assert "Reranking with fake:scripted failed (HTTP 503 from the rerank endpoint)" in texts(at.status[1], "warning")


def test_an_answer_is_one_trace_rated_with_a_comment_into_the_turns_store(kb):
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from rag_core import tracing
    from ui.state import get_turn_store

    spans = InMemorySpanExporter()
    tracing.install(tracing.TracingConfig(), spans, simple=True)
    try:
        at = app_at(PAGE)
        ask(at, "How do I free disk space when a node disk is full?")
    finally:
        tracing.install(tracing.TracingConfig(), pinned=False)
    finished = spans.get_finished_spans()
    (trace_id,) = {format(s.context.trace_id, "032x") for s in finished}
    assert [s.name for s in finished if s.parent is None] == ["agent.turn"]
    assert {"search_knowledge_base", "retrieve", "embed", "postprocess", "projection"} <= {s.name for s in finished}
    (thumbs,) = at.feedback
    thumbs.set_value(0).run()  # 👎
    assert not at.exception, at.exception
    at.text_input(key="chat.t0.comment").set_value("should cite the log rotation runbook").run()
    assert not at.exception, at.exception
    (turn,) = [t for t in get_turn_store().find(rating=-1, limit=1000)
               if t.question == "How do I free disk space when a node disk is full?"][:1]
    assert turn.comment == "should cite the log rotation runbook" and turn.knowledge_bases == ("biz",)
    assert turn.lookups and turn.lookups[0].evidence_keys and turn.mode == "offline"
    assert turn.trace_id == trace_id and turn.user_name == "local"  # the one person, as the audit log names them


# ------------------------------------------------------------------------------------ follow-up questions
FIRST = "How do I free disk space when a node disk is full?"
FOLLOW_UP = "What is the first step?"


def test_replay_carries_the_turns_before_it_into_the_debugger_s_previous_turns(kb):
    at = app_at(PAGE)
    ask(at, FIRST)
    ask(at, FOLLOW_UP)
    first_answer = at.session_state["chat.turns"][0][1].text
    first, second = debugger_links(at)
    assert "history" not in first  # the first turn had nothing before it
    assert second["q"] == [FOLLOW_UP] and second["replay"] == ["1"]
    assert second["history"] == [f"user: {FIRST}\nassistant: {first_answer.strip()}"]
    assert "[disk_full.md#chunk-" in second["history"][0]  # the answer's citations: what the offline rewrite reads
    for name in list(at.query_params):
        del at.query_params[name]
    for name, values in second.items():
        at.query_params[name] = values[0]
    at.switch_page("pages/debugger.py").run()
    assert not at.exception, at.exception
    assert at.text_area(key="history").value == second["history"][0]
    shown = texts(at)
    assert f"**Asked:** {FOLLOW_UP}" in shown and f"**Searched:** {FOLLOW_UP} (free disk space node full" in shown


def test_the_tool_panel_shows_the_searched_question_of_a_rewritten_follow_up(kb):
    from rag_core.agent.turn import AssistantTurn, ToolStep

    earlier = [f"user: {FIRST}", "assistant: Clean the journal [disk_full.md#chunk-1]"]
    rewritten = kb.retriever.lookup(FOLLOW_UP, history=earlier).to_dict()
    as_asked = kb.retriever.lookup(FIRST, history=[]).to_dict()  # no earlier turns: no rewrite
    steps = [ToolStep(f"call-{i}", "search_knowledge_base", {"query": q}, "{}", ok=True, seconds=0.1, lookup=lookup)
             for i, (q, lookup) in enumerate(((FOLLOW_UP, rewritten), (FIRST, as_asked)))]
    at = app_at(PAGE)
    at.session_state["chat.turns"] = [(FOLLOW_UP, AssistantTurn(parts=[steps[0]])),
                                      (FIRST, AssistantTurn(parts=[steps[1]]))]
    at.run()
    assert not at.exception, at.exception
    rewritten_panel, plain_panel = at.status
    shown = texts(rewritten_panel)
    assert f"**Asked:** {FOLLOW_UP}" in shown and f"**Searched:** {rewritten['rewrite']['searched']}" in shown
    assert "rewritten offline: borrowed “free”, “disk”" in texts(rewritten_panel, "caption")
    assert "**Searched:**" not in texts(plain_panel)
