"""The agent: a tool-calling loop over a streamed chat model, yielding events (see events.py).

One turn: [system, history..., question] -> the model streams text and/or tool calls -> the tools run and
their results go back as `tool` messages -> the model is called again, until it answers without tool calls
or `max_steps` model calls have been made. With no model (offline mode) the knowledge-base tool runs on
the question and the answer is extractive (offline.py); the events are the same.

The knowledge-base tool's lookups get the conversation before the question (`conversation`: the last
chat.history-pairs pairs the model is sent too), so a follow-up question ("Which command shows it?") is searched as
the standalone question it means (the rewrite stage, retrieval/rewrite.py). Offline, the tool searches the question
itself and the rewrite stage makes it standalone; with a model, the model writes the tool's query with the
conversation in view, so the stage rewrites it offline at most (`rag.rewrite = auto` asks no second model call).
Each recorded lookup keeps the rewrite.

The agent knows nothing of Streamlit: a page or the CLI iterates `run()` and renders each event.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from opentelemetry.trace import Span

from .. import tracing
from ..access.records import AccessScope
from ..citations import check_citations
from ..errors import ChatModelError
from ..feedback.records import Lookup, TurnRecord
from ..phrases import Phrase
from ..ports import ChatModel, Embedder
from ..records import AssistantReply, ConversationTurn, ToolCallRequest
from ..remote import Retrying
from ..retrieval import LookupResult
from ..retrieval.retriever import MAX_QUERY_CHARS
from ..retrieval.rewrite import parse_history
from ..tokens import count_tokens
from ..tracing import semconv as sc
from .events import ContentEvent, DoneEvent, ErrorEvent, Event, NoticeEvent, ToolCallEvent, ToolResultEvent
from .kb_tool import TOOL_NAME as KB_TOOL
from .kb_tool import conversation, shortened_note
from .offline import compose
from .prompt import SYSTEM_PROMPT
from .session import Session, Turn
from .tools import Toolbox, ToolRun, parse_arguments
from .usage import TurnUsage

log = logging.getLogger(__name__)

# Twice what one search takes (retrieval.retriever.MAX_QUERY_CHARS): a model reads the question and writes its own
# queries; offline mode searches for the question shortened to that limit, and says so (a "query_shortened" notice).
MAX_QUESTION_CHARS = 8000


class Agent:
    """`run(question, session)` yields the events of one turn. Reusable across turns and sessions."""

    def __init__(self, toolbox: Toolbox, model: ChatModel | None = None, *, max_steps: int = 6,
                 history_pairs: int = 6, system_prompt: str = SYSTEM_PROMPT, deadline: float = 300.0,
                 clock: Callable[[], float] = time.monotonic, kbs: Sequence[str] = (),
                 recorder: Callable[[TurnRecord], TurnRecord] | None = None,
                 embedder: Embedder | None = None) -> None:
        """`deadline`: seconds one turn may take in all (chat.deadline): model calls, tools, retries. `kbs`: the
        knowledge bases its tool searches (recorded with each turn). `recorder`: keeps each finished turn
        (rag_core.feedback.TurnStore.add); None = turns are not recorded. `embedder`: the knowledge base's, with
        which offline mode picks the sentences it quotes (offline.py); None = by shared words only."""
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.toolbox = toolbox
        self.model = model
        self.max_steps = max_steps
        self.history_pairs = history_pairs
        self.system_prompt = system_prompt
        self.deadline = deadline
        self._clock = clock
        self.kbs = tuple(kbs)
        self.recorder = recorder
        self.embedder = embedder

    @property
    def mode(self) -> str:
        return "offline" if self.model is None else "model"

    def describe(self) -> str:
        """One line for a page header or the CLI: which model answers, or that it is offline."""
        if self.model is None:
            return "offline mode: extractive answers from the knowledge base (no chat model configured)"
        return self.model.describe()

    def describe_phrase(self) -> Phrase | None:
        """describe() as a code with parameters, when the model says it so (None: show describe())."""
        if self.model is None:
            return Phrase("chat.offline")
        said = getattr(self.model, "describe_phrase", None)
        return said() if callable(said) else None

    def messages(self, question: str, session: Session | None = None) -> list[dict[str, Any]]:
        """The messages of the first model call of a turn."""
        history = session.history_messages(self.history_pairs) if session is not None else []
        return [{"role": "system", "content": self.system_prompt}, *history, {"role": "user", "content": question}]

    def conversation(self, session: Session | None) -> tuple[ConversationTurn, ...]:
        """The turns before the question, as the knowledge-base tool's lookups get them: the same window of
        chat.history-pairs pairs as the model's messages (`Session.history_messages`, so a client's own history,
        as /v1/chat/completions sends it, counts too); each earlier answer's text holds its `[document_id]`
        citations, which the rewrite stage reads as the headings it cited."""
        return parse_history(session.history_messages(self.history_pairs)) if session is not None else ()

    def run(self, question: str, session: Session | None = None, *, access: AccessScope | None = None,
            user: str = "") -> Iterator[Event]:
        """The turn's events; one trace (rag_core.tracing) holds its model calls, tool calls and lookups, and the
        turns store (`recorder`) keeps it, whichever entry point asked. `access`: the scope of the person asking
        (`principal.scope(kb)`), which the knowledge-base tool's lookups take (None: the tool's own, see
        kb_tool.knowledge_base_tool); an agent shared by every session of a service is told it per turn. `user`: who
        asks, recorded with the turn (TurnRecord.user_name)."""
        question = (question or "").strip()
        span = tracing.start("agent.turn", sc.AGENT, {sc.SESSION_ID: session.id if session is not None else None,
                                                      sc.INPUT_VALUE: question, sc.MODE: self.mode,
                                                      sc.KNOWLEDGE_BASES: list(self.kbs)})
        started = self._clock()
        lookups: list[Lookup] = []
        try:
            for event in tracing.within(span, self._run(question, session, access)):
                if isinstance(event, ToolResultEvent) and event.lookup is not None:
                    lookups.append(lookup_record(event.lookup))
                elif isinstance(event, (DoneEvent, ErrorEvent)):
                    event = self._ended(event, question, session, span, lookups, self._clock() - started, user)
                yield event
        except GeneratorExit:  # the consumer stopped (a client went away): the turn ends here
            tracing.fail(span, "stopped: the caller went away", "stopped")
            raise
        finally:
            tracing.end(span)

    def _ended(self, event: DoneEvent | ErrorEvent, question: str, session: Session | None, span: Span,
               lookups: list[Lookup], seconds: float, user: str = "") -> Event:
        """The span's outcome; the turn recorded (a failure to record is logged, never the turn's failure)."""
        trace_id = tracing.trace_id(span)
        if isinstance(event, ErrorEvent):
            tracing.fail(span, event.message, event.kind)
            if event.kind == "question":  # nothing was asked: nothing to record
                return event
            evidence = tuple(dict.fromkeys(k for lk in lookups for k in lk.evidence_keys))
            answer, citations, error = "", tuple[str, ...](), event.message
        else:
            tracing.set_attributes(span, {sc.OUTPUT_VALUE: event.text, sc.CITATIONS: list(event.citations),
                                          sc.EVIDENCE_KEYS: list(event.evidence_keys)})
            answer, citations, evidence, error = event.text, event.citations, tuple(event.evidence_keys), None
        index = -1
        if self.recorder is not None:
            record = TurnRecord(session.id if session is not None else "", question, answer, self.kbs, tuple(lookups),
                                tuple(evidence), tuple(citations), self.model_name, self.mode, round(seconds, 3),
                                trace_id, error, user_name=user)
            try:
                index = self.recorder(record).turn_index
            except Exception as exc:  # noqa: BLE001 - a full disk or a locked file must not cost the answer
                log.warning("The turn was answered but not recorded: %s", exc)
        if isinstance(event, DoneEvent):
            return replace(event, trace_id=trace_id, turn_index=index)
        return event

    @property
    def model_name(self) -> str:
        return model_name(self.model)

    def _run(self, question: str, session: Session | None, access: AccessScope | None = None
             ) -> Generator[Event, None, None]:
        if not question:
            yield ErrorEvent("Type a question first.", "question", 0)
            return
        if len(question) > MAX_QUESTION_CHARS:
            yield ErrorEvent(f"The question has {len(question)} characters; the limit is {MAX_QUESTION_CHARS}. "
                             "Shorten it, or ingest long text as a document instead.", "question", 0)
            return
        try:
            history = self.conversation(session)
            if self.model is None:
                yield from self._offline(question, session, history, access)
            else:
                yield from self._loop(self.model, question, session, history, access)
        except Exception:  # a bug, not a service failure: the person gets a plain message, the log the trace
            log.exception("Agent turn failed")
            yield ErrorEvent("An unexpected error ended this turn; the details are in the application log.",
                             "internal", 0)

    # ------------------------------------------------------------------------------------ model
    def _loop(self, model: ChatModel, question: str, session: Session | None,
              history: tuple[ConversationTurn, ...], access: AccessScope | None = None) -> Iterator[Event]:
        messages = self.messages(question, session)
        specs = self.toolbox.specs()
        texts: list[str] = []
        returned: dict[str, None] = {}  # evidence keys returned this turn, in order
        usage = TurnUsage()
        until = self._clock() + self.deadline
        for step in range(1, self.max_steps + 1):
            if step > 1 and self._clock() >= until:
                yield ErrorEvent(f"This turn reached chat.deadline ({self.deadline:g} s) before the model could "
                                 "answer; the tools took the time. Ask a narrower question, or raise chat.deadline.",
                                 "timeout", step)
                return
            step_started = False
            stream = model.stream(messages, specs, step, until)
            try:
                while True:
                    try:
                        item = next(stream)
                    except StopIteration as stop:
                        reply: AssistantReply = stop.value
                        break
                    if isinstance(item, Retrying):
                        yield NoticeEvent("retry", f"The chat model call failed ({item.reason}); retry {item.retry} "
                                          f"of {item.max_retries} in {item.delay:.1f} s.", step)
                        continue
                    if not step_started and texts:
                        texts.append("\n\n")  # keep text of separate model calls apart
                        yield ContentEvent("\n\n", step)
                    step_started = True
                    texts.append(item)
                    yield ContentEvent(item, step)
            except ChatModelError as exc:
                yield ErrorEvent(str(exc), exc.kind, step)
                return
            finally:
                stream.close()  # a consumer that stops early must not leave the HTTP response open
            usage.model_call(messages, reply)

            if not reply.tool_calls and not reply.content.strip():
                # Never an empty answer shown as success: the person would see nothing and no reason.
                yield ErrorEvent(f"{model.describe()} sent an empty answer (no text and no tool call"
                                 f"{', finish reason ' + repr(reply.finish_reason) if reply.finish_reason else ''}). "
                                 "Try again; if it keeps happening, check the model and chat.max-tokens.",
                                 "empty", step)
                return
            if not reply.tool_calls:
                if reply.finish_reason == "length":
                    yield NoticeEvent("length", "The answer was cut off at chat.max-tokens; raise it for longer "
                                      "answers.", step)
                yield self._finish(question, session, texts, returned, step, "model", "answer", usage)
                return
            if step == self.max_steps:
                names = ", ".join(sorted({c.name or "?" for c in reply.tool_calls}))
                message = (f"I stopped here: this turn reached the limit of {self.max_steps} model calls "
                           f"(chat.max-steps) while the model still wanted to call tools ({names}). Ask a "
                           "narrower question, or raise chat.max-steps.")
                if texts:
                    message = "\n\n" + message
                texts.append(message)
                yield ContentEvent(message, step)
                yield self._finish(question, session, texts, returned, step, "model", "max_steps", usage)
                return

            messages.append(_assistant_message(reply))
            for call in reply.tool_calls:
                run = yield from self._call_tool(call.id, call.name, call.arguments, step, history, by_model=True,
                                                 access=access)
                returned.update(dict.fromkeys(run.output.evidence_keys))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": run.content()})
        raise AssertionError("unreachable: the last step always finishes the turn")  # pragma: no cover

    def _call_tool(self, call_id: str, name: str, raw: str, step: int, history: tuple[ConversationTurn, ...] = (),
                   *, by_model: bool = False, access: AccessScope | None = None) -> Generator[Event, None, ToolRun]:
        """One tool call; the knowledge-base tool's lookups get `history` (kb_tool.conversation, held only while
        the call runs, within this thread). `by_model`: the model wrote the call's arguments."""
        arguments, problem = parse_arguments(raw)
        yield ToolCallEvent(call_id, name, arguments, raw, step)
        if problem is not None:
            yield NoticeEvent("malformed_tool_call", f"The model called {name} with arguments that are not valid "
                              f"JSON ({problem}); it was told so and can try again.", step)
        with tracing.span(name, sc.TOOL, {sc.TOOL_NAME: name, sc.TOOL_CALL_ID: call_id,
                                          sc.TOOL_PARAMETERS: raw}) as span:
            with conversation(history, by_model=by_model, access=access):
                run: ToolRun = self.toolbox.run(name, raw)
            tracing.set_content(span, sc.OUTPUT_VALUE, run.content())
            if not run.output.ok:
                tracing.fail(span, run.output.error or "the tool failed", "tool")
        out = run.output
        yield ToolResultEvent(call_id, name, out.ok, out.data, step, round(run.seconds, 4), out.error,
                              out.evidence_keys, out.lookup)
        return run

    # ---------------------------------------------------------------------------------- offline
    def _offline(self, question: str, session: Session | None,
                 history: tuple[ConversationTurn, ...], access: AccessScope | None = None) -> Iterator[Event]:
        if KB_TOOL not in self.toolbox:
            yield ErrorEvent("Offline mode needs the knowledge-base tool, and it is not configured.", "internal", 1)
            return
        if len(question) > MAX_QUERY_CHARS:  # the tool searches for the question shortened (kb_tool.fit_query)
            yield NoticeEvent("query_shortened", shortened_note(question, "question"), 1)
        run = yield from self._call_tool("offline-1", KB_TOOL, json.dumps({"query": question}, ensure_ascii=False), 1,
                                         history, access=access)
        if not run.output.ok:
            yield ErrorEvent(run.output.error or "The knowledge base search failed.", "tool", 1)
            return
        lookup = run.output.lookup
        items = lookup.projection.items if lookup is not None else ()
        # The quotes are chosen for the question searched: a follow-up's rewrite names what "it" is.
        answer = compose(lookup.searched if lookup is not None else question, items, embedder=self.embedder)
        texts = []
        for line in answer.splitlines(keepends=True):  # line by line, so a UI renders it like a stream
            texts.append(line)
            yield ContentEvent(line, 1)
        usage = TurnUsage()
        usage.counted(count_tokens(question), count_tokens(answer))  # no model: the question in, the answer out
        yield self._finish(question, session, texts, dict.fromkeys(run.output.evidence_keys), 1, "offline", "answer",
                           usage)

    # ----------------------------------------------------------------------------------- finish
    def _finish(self, question: str, session: Session | None, texts: list[str], returned: Mapping[str, None],
                steps: int, mode: str, stop_reason: str, usage: TurnUsage) -> DoneEvent:
        text = "".join(texts)
        verified, unverified = check_citations(text, returned)
        if session is not None:
            session.add(Turn(question, text, verified, mode, stop_reason))
        return DoneEvent(text, verified, unverified, tuple(returned), steps, mode, stop_reason, usage=usage.to_dict())


def model_name(model: ChatModel | None) -> str:
    """The model's name as a turn records it ("" offline)."""
    config = getattr(model, "config", None)
    return str(getattr(config, "model", "") or (model.describe() if model is not None else ""))


def lookup_record(result: LookupResult) -> Lookup:
    """A lookup as the turns store keeps it (shared with the alert triage), with its rewrite when it was asked in
    a conversation."""
    return Lookup(result.query, result.params.to_dict(), tuple(result.evidence_keys),
                  {k: round(v, 3) for k, v in result.timings.items()}, tuple(t.evidence_key for t in result.traces),
                  result.rewrite.to_dict() if result.rewrite is not None else None)


def _assistant_message(reply: AssistantReply) -> dict[str, Any]:
    return {"role": "assistant", "content": reply.content or None,
            "tool_calls": [_tool_call_message(c) for c in reply.tool_calls]}


def _tool_call_message(call: ToolCallRequest) -> dict[str, Any]:
    arguments, problem = parse_arguments(call.arguments)
    # Arguments that are not JSON are echoed as "{}": DashScope (and some vLLM chat templates) reject a
    # request whose earlier tool call has invalid JSON arguments. The raw text goes back in the tool
    # result's "received" field, so the model still sees what it sent.
    text = call.arguments if problem is None and call.arguments.strip() else json.dumps(arguments or {})
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": text}}
