"""Failures: the chat turns rated 👎, newest first, filterable by knowledge base and date. Each opens in the
retrieval debugger with its query and parameters; "add to a test set" turns it into a labelled item (the
document or chunk that should have been found, and the right answer) of a named test set that `eval` runs."""

from datetime import UTC, date, datetime, timedelta

import pandas as pd
import streamlit as st

from rag_core.errors import RagError
from rag_core.evaluation.testsets import list_test_sets, saved_sets_dir
from rag_core.feedback.cases import add_to_test_set, expected_target, failure_item
from ui.lookup import DEBUGGER_PAGE, debugger_query_params, debugger_url
from ui.state import get_settings, get_turn_store, get_workbench, knowledge_bases

st.title("👎 Failures")
st.caption("Chat answers rated 👎 (on the chat page, `POST /api/feedback` or `feedback rate`), newest first. Open "
           "one in the retrieval debugger, or add it to a test set with the document it should have found.")

ALL = "all knowledge bases"
try:
    names = knowledge_bases().names()
except RagError as exc:
    st.error(str(exc), icon="🛑")
    st.stop()
kb_col, date_col = st.columns([1, 2])
kb = kb_col.selectbox("Knowledge base", [ALL, *names], key="fail.kb")
today = datetime.now(UTC).date()
picked = date_col.date_input("Rated turns asked between", (today - timedelta(days=30), today), key="fail.dates",
                             max_value=today)
start, end = (picked[0], picked[-1]) if isinstance(picked, tuple) and picked else (picked, picked)
try:
    turns = get_turn_store().find(rating=-1, kb=None if kb == ALL else kb,
                                  since=start.isoformat() if isinstance(start, date) else None,
                                  until=end.isoformat() if isinstance(end, date) else None, limit=1000)
except RagError as exc:
    st.error(str(exc), icon="🛑")
    st.stop()
if not turns:
    st.info("No 👎 answers here: rate answers on the Agent chat page, and the failures show up here.", icon="✅")
    st.stop()


def first_lookup(turn):  # the lookup the debugger replays: the turn's first search
    return turn.lookups[0] if turn.lookups else None


def link(turn) -> str | None:
    lookup = first_lookup(turn)
    if lookup is None:
        return None
    return debugger_url(lookup.query, lookup.params, kb=turn.knowledge_bases[0] if turn.knowledge_bases else None)


table = pd.DataFrame([{"asked": t.created_at[:16].replace("T", " "), "knowledge base": ", ".join(t.knowledge_bases),
                       "question": t.question, "comment": t.comment, "cited": ", ".join(t.citations),
                       "debugger": link(t)} for t in turns])
st.dataframe(table, hide_index=True, key="fail.table", width="stretch",
             column_config={"debugger": st.column_config.LinkColumn("debugger", display_text="open")})

labels = {i: f"{t.created_at[:16].replace('T', ' ')} — {t.question[:80]}" for i, t in enumerate(turns)}
chosen = st.selectbox("Failure", list(labels), format_func=labels.get, key="fail.pick")
turn = turns[chosen]
with st.container(border=True):
    st.markdown(f"**Question:** {turn.question}")
    if turn.comment:
        st.markdown(f"**Comment:** {turn.comment}")
    st.markdown("**Answer:**")
    st.markdown(turn.answer or f"_(no answer: {turn.error})_")
    st.caption(f"{turn.mode} · {turn.model or 'offline'} · {turn.seconds:.1f} s · trace `{turn.trace_id}` · "
               f"evidence: {', '.join(f'`{k}`' for k in turn.evidence_keys) or 'none'}")
    lookup = first_lookup(turn)
    kb_name = turn.knowledge_bases[0] if turn.knowledge_bases else None
    if lookup is not None:
        st.page_link(DEBUGGER_PAGE, label=f"Open “{lookup.query}” in the retrieval debugger", icon="🔎",
                     query_params=debugger_query_params(lookup.query, lookup.params, kb=kb_name))

st.subheader("Add to a test set")
# What it should have found: the turn's evidence, the hits its lookups dropped (the "why wasn't it retrieved?"
# candidates), then every document of the knowledge base.
offered = list(dict.fromkeys([*turn.evidence_keys, *(k for lk in turn.lookups for k in lk.candidates)]))
try:
    if kb_name in names:
        offered += [d.doc_id for d in get_workbench(kb_name).store.list_documents() if d.doc_id not in offered]
except RagError as exc:
    st.caption(f"The documents of {kb_name} cannot be listed: {exc}")
root = saved_sets_dir(get_settings())
existing = [s.name for s in list_test_sets(root)]
with st.form("fail.add", border=True):
    expected = st.selectbox("Expected document or chunk", offered, index=None, key="fail.expected",
                            placeholder="the chunk or document the answer should come from",
                            help="The turn's evidence first, then the hits its search dropped, then every document.")
    question = st.text_input("Question", value=turn.question, key="fail.question")
    answer = st.text_area("Right answer (optional)", key="fail.answer",
                          help="A verbatim quote of the expected chunk scores answers best (`eval answers`).")
    set_col, new_col = st.columns(2)
    set_name = set_col.selectbox("Test set", [*existing, "(new)"], key="fail.set")
    new_name = new_col.text_input("New test set name", value="failures", key="fail.new_set",
                                  disabled=bool(existing) and set_name != "(new)")
    submitted = st.form_submit_button("Add to the test set", icon="➕", type="primary")
if submitted:
    try:
        name = new_name if set_name == "(new)" or not existing else set_name
        path = add_to_test_set(root, name, failure_item(turn, expected or "", answer, question))
    except RagError as exc:
        st.error(str(exc), icon="🛑")
    else:
        st.success(f"Added to test set **{name}**: run it with `python -m rag_core eval {path} --live`.", icon="✅")
if expected and lookup is not None:
    doc_id, _ = expected_target(expected, turn.knowledge_bases)
    st.page_link(DEBUGGER_PAGE, label=f"Why wasn't {doc_id} retrieved?", icon="🔍",
                 query_params=debugger_query_params(lookup.query, lookup.params, doc_id, kb=kb_name))
