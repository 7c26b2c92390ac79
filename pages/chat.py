"""Agent chat: the agent answers from the knowledge base with citations; every tool call is shown."""

import streamlit as st

from rag_core.agent import Session
from rag_core.errors import RagError
from ui.access import current_principal, who
from ui.chat import earlier_turns, render_turn, stream_turn
from ui.errors import show_error
from ui.i18n import t
from ui.reasons import phrase
from ui.state import chat_mode, get_agent, get_settings, readable_kbs, selected_kb

current_principal()  # signed in first (ui/access.py): nothing below runs for an unknown person

ss = st.session_state
title_col, clear_col = st.columns([4, 1], vertical_alignment="bottom")
title_col.title(t("💬 Agent chat"))

try:
    available = readable_kbs()
    current = selected_kb()
    # The selection follows the sidebar's knowledge base until the person picks others here.
    # (A widget's state is dropped while another page shows: then it starts again from the sidebar's.)
    if ss.get("chat.kbs_for") != current or not ss.get("chat.kbs") or not set(ss["chat.kbs"]) <= set(available):
        ss["chat.kbs"] = [current] if current in available else available[:1]
        ss["chat.kbs_for"] = current
    chosen = st.multiselect(t("Knowledge bases the agent searches"), available, key="chat.kbs",
                            help=t("With several, each is searched and the evidence merged by score; evidence keys "
                                   "then carry the knowledge base's name (`small:runbooks/a.md#chunk-2`)."),
                            placeholder=t("Choose knowledge bases"))
    if not chosen:
        st.info(t("Choose at least one knowledge base for the agent to search."), icon="📚")
        st.stop()
    agent = get_agent(chosen)
except RagError as exc:
    show_error(exc)
    st.stop()

mode = chat_mode(get_settings())
if agent.mode == "offline":
    st.caption(t("Mode: **{mode}** — no chat model configured", mode=mode.label))
    st.info(t("Offline mode: answers quote the knowledge base directly, with citations. Set `DASHSCOPE_API_KEY` "
              "(or `RAG_CHAT_BASE_URL` and its key) and restart for a chat model."), icon="💡")
else:
    model = phrase(agent.describe_phrase(), agent.describe())  # which model answers, in the user's language
    st.caption(t("Mode: **{mode}** — {model}", mode=mode.label, model=model))

ss.setdefault("chat.session", Session())
ss.setdefault("chat.turns", [])  # [(question, AssistantTurn)], this browser session only
if clear_col.button(t("Clear conversation"), icon="🧹", key="chat.clear", disabled=not ss["chat.turns"],
                    width="stretch"):
    ss["chat.session"].clear()
    ss["chat.turns"] = []
    st.rerun()

if not ss["chat.turns"]:
    st.caption(t("Ask about the knowledge base, e.g. “CPU 使用率过高怎么处理？” or “How do I free disk space on a "
                 "node?”"))
for n, (question, turn) in enumerate(ss["chat.turns"]):
    with st.chat_message("user"):  # i18n: ok (a role)
        st.markdown(question)
    with st.chat_message("assistant"):  # i18n: ok (a role)
        render_turn(turn, key=f"chat.t{n}", earlier=earlier_turns(ss["chat.turns"][:n], agent.history_pairs))

if question := st.chat_input(t("Ask about runbooks, alerts, policies…"), key="chat.input"):
    with st.chat_message("user"):  # i18n: ok (a role)
        st.markdown(question)
    with st.chat_message("assistant"):  # i18n: ok (a role)
        turn = stream_turn(agent.run(question, ss["chat.session"], user=who()),
                           key=f"chat.t{len(ss['chat.turns'])}",
                           earlier=earlier_turns(ss["chat.turns"], agent.history_pairs))
    ss["chat.turns"].append((question, turn))
    st.rerun()  # the transcript above (with its clear button enabled) now includes this turn
