"""The chat page's transcript: agent events -> a plain record per turn, rendered live and again from
session state on every rerun, with the same components as the debugger (evidence table, chunk card)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import streamlit as st

from rag_core.agent import ContentEvent, DoneEvent, ErrorEvent, Event, NoticeEvent, ToolCallEvent, ToolResultEvent
from rag_core.agent.kb_tool import TOOL_NAME as KB_TOOL
from rag_core.agent.turn import AssistantTurn, ToolStep
from rag_core.errors import RagError
from rag_core.records import cited_as

from .access import record
from .blocks import block_html, cited_block, more_than_a_chunk
from .components import chunk_card, evidence_table
from .errors import show_chat_error, show_error, show_notice
from .html import ChunkView, source_link_html
from .i18n import t, tn
from .lookup import DEBUGGER_PAGE, HISTORY, debugger_query_params, history_text, lookup_warnings, rewrite_view
from .reasons import location_text

CURSOR = " ▌"
# The (question, answer) pairs of the chat before a turn, as its agent was given them: what "Replay this lookup in
# the retrieval debugger" puts in the debugger's "Previous turns" box.
Earlier = Sequence[tuple[str, str]]


def step_label(step: ToolStep) -> str:
    """A tool step's one-line title in the transcript."""
    if step.name == KB_TOOL:
        head = t("🔎 Searched the knowledge base: “{query}”", query=step.query)
    else:
        args = ", ".join(f"{k}={v!r}" for k, v in (step.arguments or {}).items())
        head = f"🔧 {step.name}({args})"
    if step.ok is None:
        return head + " …"
    if not step.ok:
        return head + t(" — failed")
    if step.lookup is not None:
        n = len(step.lookup["evidence"])
        return head + tn(" — {n} evidence block · {seconds} s", " — {n} evidence blocks · {seconds} s", n,
                         seconds=f"{step.seconds:.2f}")
    return head + f" · {step.seconds:.2f} s"


# ---------------------------------------------------------------------------------------- rendering
def _render_arguments(step: ToolStep) -> None:
    st.caption(t("Arguments"))
    st.code(json.dumps(step.arguments if step.arguments is not None else step.raw_arguments, ensure_ascii=False,
                       indent=2), language="json")


def _render_result(step: ToolStep, key: str, earlier: Earlier = ()) -> None:
    if step.ok is None:
        return
    if not step.ok:
        if step.error:
            show_chat_error(step.error, "tool_step", icon=None)
        else:
            st.error(t("The tool failed."))
    elif step.lookup is not None:
        params = step.lookup["params"]
        dropped = len(step.lookup["raw_hits"]) - len(step.lookup["evidence"])
        rerank = step.lookup.get("rerank") or {}
        reranked = (t(" → reranked the top {n} with {reranker}", n=rerank["candidates"], reranker=rerank["reranker"])
                    if rerank.get("applied") else "")
        st.caption(t("retrieve-k {k} → {hits} hits{reranked} → {evidence} evidence blocks ({dropped} dropped; "
                     "max {cap} per document, return-n {n})", k=params["retrieve_k"],
                     hits=len(step.lookup["raw_hits"]), reranked=reranked, evidence=len(step.lookup["evidence"]),
                     dropped=dropped, cap=params["max_chunks_per_document"], n=params["return_n"]))
        rewrite_view(step.lookup, changed_only=True)  # a follow-up searched as the standalone question it means
        lookup_warnings(step.lookup)
        evidence_table(step.lookup, key=f"{key}.evidence")
        st.page_link(DEBUGGER_PAGE, label=t("Replay this lookup in the retrieval debugger"), icon="🔎",
                     query_params=debugger_query_params(step.lookup["query"], params, replay=True,
                                                        **{HISTORY: history_text(earlier, params)}))
    else:
        st.caption(t("Result"))
        st.json(step.result, expanded=False)


def _state(step: ToolStep) -> Literal["running", "complete", "error"]:
    return "running" if step.ok is None else ("complete" if step.ok else "error")


def render_tool(step: ToolStep, key: str, earlier: Earlier = ()) -> None:
    """A tool call as a status block: its arguments, then its result (the evidence table for lookups). `earlier`:
    the chat's turns before this one."""
    with st.status(step_label(step), state=_state(step), expanded=False):
        _render_arguments(step)
        _render_result(step, key, earlier)


def earlier_turns(turns: Sequence[tuple[str, AssistantTurn]], pairs: int) -> list[tuple[str, str]]:
    """The chat's (question, answer) pairs the agent is given before the next turn (rag_core.agent.Session.window):
    the last `pairs` that were answered (a turn that ended in an error is not kept)."""
    answered = [(question, turn.text) for question, turn in turns if turn.text.strip() and not turn.error]
    return answered[-pairs:] if pairs > 0 else []


def citation_label(cited: str, block: dict[str, Any] | None) -> str:
    """A citation chip: the cited key and the page, slide or rows it is on, in the user's language
    (`manual.pdf#chunk-3 p. 12`, `manual.pdf#chunk-3 第 12 页`)."""
    return cited_as(cited, location_text(str(block.get("location") or ""))) if block else cited


def render_citations(turn: AssistantTurn, key: str) -> None:
    """Cited evidence keys as chips; each opens the cited chunk, or, when the evidence grew or merged (a block's key,
    or a hit inside a block), the block with the cited chunk marked and its section named. Unverified citations are
    flagged."""
    if not turn.citations and not turn.unverified:
        return
    evidence = turn.evidence()
    lookups = [step.lookup for step in turn.tools() if step.lookup]
    with st.container(horizontal=True, gap="small", key=f"{key}.citations"):
        st.caption(t("Sources:"), width="content")
        for i, cited in enumerate(turn.citations):
            found = cited_block(lookups, cited)
            block = evidence.get(cited) or (evidence.get(str(found[0]["matched"][0])) if found else None)
            with st.popover(citation_label(cited, block), icon="📄", key=f"{key}.cite.{i}"):
                if block is not None and block.get("source_url"):  # a synced source's document: where it is
                    st.html(source_link_html(str(block["source_url"])))
                if found is not None and more_than_a_chunk(found[0]):  # grown or merged: the block, chunk marked
                    grown, lookup = found
                    st.caption(t("The cited chunk, marked in the evidence block the agent was given:")
                               if cited != grown["key"] else
                               t("The chunks found, marked in the evidence block the agent was given:"))
                    st.html(block_html(grown, params=lookup.get("params"), cited=cited))
                    continue
                if block is None:
                    st.write(t("The tool returned this key, but its content is not in this turn's lookups."))
                    continue
                chunk_card(ChunkView(index=block["chunk_index"] if block["chunk_index"] is not None else 0,
                                     text=block["content"], heading_path=block.get("heading_path", ""),
                                     doc_id=block.get("doc_id") or cited, score=block["score"],
                                     location=location_text(block.get("location", ""))))
    if turn.unverified:
        st.warning(t("Cited but not returned by a tool this turn (check these): {keys}",
                     keys=", ".join(f"`{k}`" for k in turn.unverified)), icon="⚠️")


def _save_rating(turn: AssistantTurn, key: str) -> None:
    """The 👍/👎 and comment of a turn, into the turns store (rag_core.feedback) by its trace id."""
    from .state import get_turn_store

    thumbs = st.session_state.get(f"{key}.rating")
    if thumbs is None or not turn.trace_id:
        return
    try:
        get_turn_store().rate(1 if thumbs == 1 else -1, st.session_state.get(f"{key}.comment", ""),
                              trace_id=turn.trace_id)
    except RagError as exc:
        st.session_state[f"{key}.rating_error"] = exc
        st.session_state.pop(f"{key}.rating_saved", None)
    else:
        record("feedback.rate", "", turn.trace_id, rating=1 if thumbs == 1 else -1)
        st.session_state.pop(f"{key}.rating_error", None)
        st.session_state[f"{key}.rating_saved"] = bool(st.session_state.get(f"{key}.comment", "").strip())


def render_feedback(turn: AssistantTurn, key: str) -> None:
    """👍 / 👎 and an optional comment under a recorded answer; 👎 turns are listed on the Failures page."""
    if not turn.trace_id or turn.turn_index < 0:
        return  # not recorded (the turns store failed): nothing to rate
    with st.container(horizontal=True, gap="small", vertical_alignment="center", key=f"{key}.feedback"):
        st.feedback("thumbs", key=f"{key}.rating", on_change=_save_rating, args=(turn, key))  # i18n: ok (a kind)
        if st.session_state.get(f"{key}.rating") is not None:
            st.text_input(t("Comment (optional)"), key=f"{key}.comment", placeholder=t("What was wrong, or right?"),
                          label_visibility="collapsed", on_change=_save_rating, args=(turn, key))
    if error := st.session_state.get(f"{key}.rating_error"):
        show_error(error)
    elif (commented := st.session_state.get(f"{key}.rating_saved")) is not None:
        st.caption("✅ " + (t("Rating and comment saved.") if commented else t("Rating saved.")))


def render_turn(turn: AssistantTurn, key: str, earlier: Earlier = ()) -> None:
    """An answered turn, as it looked when it finished. `earlier`: the chat's turns before it."""
    for i, part in enumerate(turn.parts):
        if isinstance(part, ToolStep):
            render_tool(part, f"{key}.tool{i}", earlier)
        elif part.strip():
            st.markdown(part)
    for notice, kind in zip(turn.notices, turn.notice_kinds, strict=False):
        show_notice(notice, kind)
    if turn.error:
        show_chat_error(turn.error, turn.error_kind)
    render_citations(turn, key)
    render_feedback(turn, key)


def stream_turn(events: Iterable[Event], key: str, earlier: Earlier = ()) -> AssistantTurn:
    """Render a turn while its events arrive (the answer streams into place); return its record. `earlier`: the
    chat's turns before it."""
    turn = AssistantTurn()
    statuses: dict[str, Any] = {}
    text_slot: Any = None
    for event in events:
        step = turn.apply(event)
        if isinstance(event, ToolCallEvent) and step is not None:
            text_slot = None  # text after a tool call goes below it
            statuses[step.call_id] = st.status(step_label(step), state="running", expanded=False)
            with statuses[step.call_id]:
                _render_arguments(step)
        elif isinstance(event, ToolResultEvent) and step is not None:
            step_key = f"{key}.tool{next(i for i, p in enumerate(turn.parts) if p is step)}"
            status = statuses.get(step.call_id)
            if status is None:
                render_tool(step, step_key, earlier)
                continue
            with status:
                _render_result(step, step_key, earlier)
            status.update(label=step_label(step), state=_state(step))
        elif isinstance(event, ContentEvent):
            if text_slot is None:
                text_slot = st.empty()
            if isinstance(piece := turn.parts[-1], str):  # apply() left the text piece last
                text_slot.markdown(piece + CURSOR)
        elif isinstance(event, NoticeEvent):
            show_notice(event.message, event.kind)
        elif isinstance(event, (DoneEvent, ErrorEvent)):
            if text_slot is not None and isinstance(turn.parts[-1], str):
                text_slot.markdown(turn.parts[-1])
            if isinstance(event, ErrorEvent):
                show_chat_error(event.message, event.kind)
    render_citations(turn, key)
    return turn
