"""Failures: the chat turns rated 👎, newest first, filterable by knowledge base, date and who asked. Each opens in the
retrieval debugger with its query and parameters; "add to a test set" turns it into a labelled item (the
document or chunk that should have been found, and the right answer) of a named test set that `eval` runs."""

from datetime import UTC, date, datetime, timedelta

import pandas as pd
import streamlit as st

from rag_core.access.records import Role
from rag_core.errors import RagError
from rag_core.evaluation.failures import CHUNK, add_to_test_set, expected_target, failure_item
from rag_core.feedback.records import Lookup, TurnRecord
from ui.access import current_principal, gate
from ui.errors import show_error
from ui.evaluation import EVALUATION_PAGE, headers, link_column, preselect_saved_set
from ui.i18n import N_, t
from ui.lookup import (
    DEBUGGER_PAGE,
    HISTORY,
    access_of,
    debugger_query_params,
    debugger_url,
    history_text,
    recorded_history,
)
from ui.navigation import page_file
from ui.state import get_settings, get_test_sets, get_turn_store, get_workbench, readable_kbs

current_principal()  # signed in first (ui/access.py): nothing below runs for an unknown person

st.title(t("👎 Failures"))
st.caption(t("Chat answers rated 👎 (on the chat page, `POST /api/feedback` or `feedback rate`), newest first. Open "
             "one in the retrieval debugger, or add it to a test set with the document it should have found."))

ALL = N_("all knowledge bases")  # the option's value (shown translated)
ANYONE = N_("anyone")  # the "asked by" option of every person
NEW = N_("(new)")
CHAT_PAGE = "pages/chat.py"
try:
    names = readable_kbs()
except RagError as exc:
    show_error(exc)
    st.stop()
kb_col, date_col, user_col = st.columns([1, 2, 1])
kb = kb_col.selectbox(t("Knowledge base"), [ALL, *names], key="fail.kb",
                      format_func=lambda name: t(ALL) if name == ALL else name)
today = datetime.now(UTC).date()
picked = date_col.date_input(t("Rated turns asked between"), (today - timedelta(days=30), today), key="fail.dates",
                             max_value=today)
start, end = (picked[0], picked[-1]) if isinstance(picked, tuple) and picked else (picked, picked)
try:
    turns = get_turn_store().find(rating=-1, kb=None if kb == ALL else kb,
                                  since=start.isoformat() if isinstance(start, date) else None,
                                  until=end.isoformat() if isinstance(end, date) else None, limit=1000)
except RagError as exc:
    show_error(exc)
    st.stop()
principal = current_principal(check=False)  # a turn over a knowledge base they may not read is not shown
turns = [x for x in turns if len(principal.readable(x.knowledge_bases)) == len(x.knowledge_bases)]
# Who asked (TurnRecord.user_name: "local" is the one person, cli:<OS user> the command line), among these turns.
asker = user_col.selectbox(t("Asked by"), [ANYONE, *sorted({x.user_name for x in turns if x.user_name})],
                           key="fail.user", format_func=lambda name: t(ANYONE) if name == ANYONE else name)
turns = [x for x in turns if asker in (ANYONE, x.user_name)]
if not turns:
    st.info(t("No 👎 answers here: rate answers on the Agent chat page, and the failures show up here."), icon="✅")
    st.page_link(page_file(CHAT_PAGE), label=t("Agent chat"), icon="💬")
    st.stop()


def first_lookup(turn: TurnRecord) -> Lookup | None:  # the lookup the debugger replays: the turn's first search
    return turn.lookups[0] if turn.lookups else None


def link(turn: TurnRecord) -> str | None:
    lookup = first_lookup(turn)
    if lookup is None:
        return None
    return debugger_url(lookup.query, lookup.params, kb=turn.knowledge_bases[0] if turn.knowledge_bases else None)


table = pd.DataFrame([{"asked": x.created_at[:16].replace("T", " "), "knowledge base": ", ".join(x.knowledge_bases),
                       "asked by": x.user_name, "question": x.question, "comment": x.comment,
                       "cited": ", ".join(x.citations), "debugger": link(x)} for x in turns])
st.dataframe(table, hide_index=True, key="fail.table", width="stretch",
             column_config=headers(table.columns, debugger=link_column()))

labels = {i: f"{x.created_at[:16].replace('T', ' ')} — {x.question[:80]}" for i, x in enumerate(turns)}
chosen = st.selectbox(t("Failure"), list(labels), format_func=lambda i: labels[i], key="fail.pick")
turn = turns[chosen]
with st.container(border=True):
    st.markdown(t("**Question:** {question}", question=turn.question))
    if turn.comment:
        st.markdown(t("**Comment:** {comment}", comment=turn.comment))
    st.markdown(t("**Answer:**"))
    st.markdown(turn.answer or t("_(no answer: {error})_", error=turn.error))
    st.caption(t("{mode} · {model} · {seconds} s · trace `{trace}` · evidence: {evidence}", mode=turn.mode,
                 model=turn.model or t("offline"), seconds=f"{turn.seconds:.1f}", trace=turn.trace_id,
                 evidence=", ".join(f"`{k}`" for k in turn.evidence_keys) or t("none")))
    lookup = first_lookup(turn)
    kb_name = turn.knowledge_bases[0] if turn.knowledge_bases else None
    # The turns asked before it in its chat session (those the turns store still keeps) go to the debugger's
    # "Previous turns" box, so a follow-up is searched as it was.
    earlier: dict[str, str] = {}
    if lookup is not None:
        try:
            pairs = recorded_history(get_turn_store(), turn, get_settings()["chat.history-pairs"])
        except RagError:  # the turns store cannot be read now: the box stays empty
            pairs = []
        earlier = {HISTORY: history_text(pairs, lookup.params)}
        st.page_link(DEBUGGER_PAGE, label=t("Open “{query}” in the retrieval debugger", query=lookup.query), icon="🔎",
                     query_params=debugger_query_params(lookup.query, lookup.params, kb=kb_name, replay=True,
                                                        **earlier))

st.subheader(t("Add to a test set"))
if not gate(kb_name or get_settings()["milvus.collection"], Role.EDITOR):  # test sets are an editor's
    st.stop()
# What it should have found: the turn's evidence, the hits its lookups dropped (the "why wasn't it retrieved?"
# candidates), then every document of the knowledge base.
offered = list(dict.fromkeys([*turn.evidence_keys, *(k for lk in turn.lookups for k in lk.candidates)]))
try:
    if kb_name in names:
        offered += [d.doc_id for d, _ in get_workbench(kb_name).listed_documents(access_of(kb_name))
                    if d.doc_id not in offered]
except RagError as exc:
    st.caption(t("The documents of {kb} cannot be listed: {error}", kb=kb_name, error=exc))
try:  # the data folder's files, or database.url's database, which may be out of reach
    sets = get_test_sets()
    existing = [s.name for s in sets.list_sets()]
except RagError as exc:
    show_error(exc)
    st.stop()
# The set is chosen outside any form: choosing "(new)" enables the name field at once (a form would send the
# choice only with the submit, leaving the field disabled and the item in a set called "failures").
set_col, new_col = st.columns(2)
set_name = set_col.selectbox(t("Test set"), [*existing, NEW], key="fail.set",
                             format_func=lambda name: t(NEW) if name == NEW else name)
new_name = new_col.text_input(t("New test set name"), value="failures", key="fail.new_set", disabled=set_name != NEW)
# The item's fields start at the picked failure's: picking another one starts them afresh (a keyed field keeps
# its value across reruns, so the question of the failure picked before would go into this one's item).
fields = {"fail.question": turn.question, "fail.answer": "", "fail.expected": None}
if st.session_state.get("fail.item_of") != turn.id:
    st.session_state.update({**fields, "fail.item_of": turn.id})
for field, value in fields.items():
    st.session_state.setdefault(field, value)
with st.container(border=True):
    expected = st.selectbox(t("Expected document or chunk"), offered, index=None, key="fail.expected",
                            placeholder=t("the chunk or document the answer should come from"),
                            help=t("The turn's evidence first, then the hits its search dropped, then every "
                                   "document."))
    question = st.text_input(t("Question"), key="fail.question")
    answer = st.text_area(t("Right answer (optional)"), key="fail.answer",
                          help=t("A verbatim quote of the expected chunk scores answers best (the Evaluation page's "
                                 "Answers tab, or `eval answers`)."))
    submitted = st.button(t("Add to the test set"), icon="➕", type="primary", key="fail.add")
if submitted:
    try:
        name = new_name if set_name == NEW else set_name
        add_to_test_set(sets, name, failure_item(turn, expected or "", answer, question))
    except RagError as exc:
        show_error(exc)
    else:
        st.success(t("Added to test set **{name}**.", name=name), icon="✅")
        preselect_saved_set(name, kb_name if kb_name in names else None)  # the link below opens it, ready to run
        st.page_link(page_file(EVALUATION_PAGE), label=t("Run {name} on the Evaluation page", name=name), icon="📏")
        st.caption(t("From the command line: `{command}`", command=f"python -m rag_core eval {name} --live"))
if expected and lookup is not None:
    # The panel checks the document (its chunk, when one was picked) and the right answer: a document in the evidence
    # whose chunks lack the answer is a failure too, which the document alone would call retrieved.
    doc_id, source = expected_target(expected, turn.knowledge_bases)
    st.page_link(DEBUGGER_PAGE, label=t("Why wasn't {doc} retrieved?", doc=doc_id), icon="🔍",
                 query_params=debugger_query_params(lookup.query, lookup.params, doc_id, kb=kb_name, replay=True,
                                                    expect_chunk=source and source.partition(CHUNK)[2],
                                                    answer=answer.strip(), **earlier))
