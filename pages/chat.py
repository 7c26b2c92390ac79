"""Agent chat: the agent answers from the knowledge base with citations; every tool call is shown."""

import streamlit as st

from rag_core.agent import Session
from rag_core.errors import RagError
from ui.chat import render_turn, stream_turn
from ui.state import chat_mode, get_agent, get_settings

ss = st.session_state
title_col, clear_col = st.columns([4, 1], vertical_alignment="bottom")
title_col.title("💬 Agent chat")

try:
    agent = get_agent()
except RagError as exc:
    st.error(str(exc), icon="🛑")
    st.stop()

mode = chat_mode(get_settings())
if agent.mode == "offline":
    st.caption(f"Mode: **{mode.label}** — no chat model configured")
    st.info("Offline mode: answers quote the knowledge base directly, with citations. Set `DASHSCOPE_API_KEY` "
            "(or `RAG_CHAT_BASE_URL` and its key) and restart for a chat model.", icon="💡")
else:
    st.caption(f"Mode: **{mode.label}** — {agent.describe()}")

ss.setdefault("chat.session", Session())
ss.setdefault("chat.turns", [])  # [(question, AssistantTurn)], this browser session only
if clear_col.button("Clear conversation", icon="🧹", key="chat.clear", disabled=not ss["chat.turns"], width="stretch"):
    ss["chat.session"].clear()
    ss["chat.turns"] = []
    st.rerun()

if not ss["chat.turns"]:
    st.caption("Ask about the knowledge base, e.g. “CPU 使用率过高怎么处理？” or “How do I free disk space on a node?”")
for n, (question, turn) in enumerate(ss["chat.turns"]):
    with st.chat_message("user"):
        st.markdown(question)
    with st.chat_message("assistant"):
        render_turn(turn, key=f"chat.t{n}")

if question := st.chat_input("Ask about runbooks, alerts, policies…", key="chat.input"):
    with st.chat_message("user"):
        st.markdown(question)
    with st.chat_message("assistant"):
        turn = stream_turn(agent.run(question, ss["chat.session"]), key=f"chat.t{len(ss['chat.turns'])}")
    ss["chat.turns"].append((question, turn))
    st.rerun()  # the transcript above (with its clear button enabled) now includes this turn
