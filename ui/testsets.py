"""The Evaluation page's test sets: the "Generate a test set" panel, the review table, and the "Answers" view.

Generation, review, saving and scoring are rag_core.evaluation's (`generate_test_set`, `review_item`,
`TestSetStore.save`, `score_answers`: the `eval generate` and `eval answers` commands call the same); this module
draws the widgets and renders what they return.

The review table (`st.data_editor`) is drawn from the set's items kept in the session (`BASE`), and every cell
edit is folded into them at once (through `review_item`, so an edited question or answer makes its item "edited"),
then the page runs again to show it: the review column follows the edit, and the edits outlive the widget's own
state, which Streamlit drops whenever a run does not draw the table (another page, another tab of the browser's
history) and which a language switch would otherwise start afresh. The editor keeps its key while the set's
version does (a keyed editor with fixed rows keeps its edits when only its values change); the item panel's buttons
change one item and start the table afresh from the result (a new version, a new key).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from rag_core.bootstrap import build_agent, build_eval_model, build_eval_runs
from rag_core.errors import RagError
from rag_core.evaluation.answers import score_answers
from rag_core.evaluation.generate import GENERATORS, OFFLINE_WARNING, generate_test_set
from rag_core.evaluation.runner import EvalProgress
from rag_core.evaluation.testsets import (
    REVIEW_STATES,
    TestItem,
    TestSet,
    review_item,
    source_chunk,
)
from rag_core.evaluation.textmatch import find_normalised
from ui.errors import show_error
from ui.evaluation import (
    REJECTED_NAMES,
    column_header,
    counts_text,
    generator_name,
    headers,
    known_text,
    link_column,
    review_name,
    stage_name,
)
from ui.html import esc
from ui.i18n import N_, t
from ui.lookup import debugger_url
from ui.state import get_test_sets, get_workbench, kb_settings, readable_kbs, selected_kb

BASE = "eval_ts_base"  # {"items": [...], "meta": {...}, "kb": name, "name": suggested name, "version": n}
LAST_ANSWERS = "eval_ts_answers"
NO_ANSWER = "should not answer"
AFTER = "asked after"  # a follow-up's earlier question(s), read-only
COLUMNS = ["id", "review", AFTER, "query", "answer", NO_ANSWER, "kind", "source"]
FIGURES = {"answer_found": N_("Answer found"), "f1": N_("Token F1"), "citations_valid": N_("Citations valid"),
           "citation_support": N_("Citation support"), "refusals": N_("Refusals"), "faithfulness": N_("Faithfulness")}
BENCH_RESULT = Path(__file__).resolve().parent.parent / "bench" / "results" / "testsets.json"


# ------------------------------------------------------------------------------------------ how far to trust
def offline_note(result_file: Path = BENCH_RESULT) -> str | None:
    """What the published benchmark says of offline sets when they fall short (Kendall's tau below 0.8 against
    real labels on some bundled set), from its result file; None when they do not, or it has not been run."""
    try:
        data = json.loads(result_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    rows = [r for r in data.get("agreement", []) if r.get("generator") == "offline"]
    short = [r for r in rows if r.get("tau") is None or r["tau"] < 0.8 or not r.get("same_winner")]
    if not short:
        return None
    parts = ", ".join(t("{set} tau {tau}", set=r["set"], tau=t("undefined") if r.get("tau") is None else
                        format(r["tau"], ".2f")) + ("" if r.get("same_winner") else t(", another winner"))
                      for r in short)
    return t("Measured against real labels (bench/testsets.py), offline sets order configurations differently on "
             "some corpora ({parts}): check a choice they suggest on a reviewed or model-generated set.", parts=parts)


def offline_warning() -> None:
    st.warning(known_text(OFFLINE_WARNING), icon="⚠️")
    note = offline_note()
    if note:
        st.caption(note)


# ------------------------------------------------------------------------------------------ generate
def generate_panel(settings: Any) -> None:
    """Knowledge base, size, seed and generator; a progress bar; the result goes to the review table."""
    names = readable_kbs()
    c1, c2, c3, c4 = st.columns([2, 1, 1, 1])
    kb = c1.selectbox(t("Knowledge base"), names, index=names.index(selected_kb()) if selected_kb() in names else 0,
                      key="eval_gen_kb")
    size = int(c2.number_input(t("Size"), min_value=1, value=20, step=5, key="eval_gen_size"))
    seed = int(c3.number_input(t("Seed"), min_value=0, value=0, key="eval_gen_seed",
                               help=t("The same seed, knowledge base and generator give the same set.")))
    generator = c4.radio(t("Generator"), list(GENERATORS), index=list(GENERATORS).index("offline"),
                         key="eval_gen_generator", format_func=generator_name,
                         help=t("model: a chat model writes one question per sampled chunk (`eval.generator-model`, "
                                "else the chat model); offline: questions made by templates from the documents' own "
                                "words."))
    follow_ups = st.slider(t("Follow-up items"), min_value=0, max_value=50, value=0, step=5, format="%d%%",
                           key="eval_gen_follow_ups",
                           help=t("The share of items that are follow-ups: a question that only makes sense after the "
                                  "first question it keeps as its history (\"How long is that?\"), to measure how "
                                  "follow-ups are rewritten before the search. None by default."))
    if generator == "offline":
        offline_warning()
    if not st.button(t("Generate"), type="primary", key="eval_gen_run"):
        return
    kb_conf = kb_settings(kb)
    workbench = get_workbench(kb)
    model = build_eval_model(kb_conf, "generator") if generator == "model" else None
    bar = st.progress(0.0, text=t("Reading the documents…"))

    def on_progress(p: EvalProgress) -> None:
        bar.progress(p.fraction, text=f"{stage_name(p.stage)}: {p.done}/{p.total} — {p.detail}")

    result = generate_test_set(workbench.store, size=size, generator=generator, model=model,
                               lookup=workbench.retriever.lookup, seed=seed, follow_ups=follow_ups / 100,
                               kb_name=kb, progress=on_progress)
    bar.progress(1.0, text=t("{n} items in {seconds} s", n=len(result.items), seconds=f"{result.seconds:.1f}"))
    version = st.session_state.get(BASE, {}).get("version", 0) + 1
    st.session_state[BASE] = {"items": list(result.items), "meta": result.meta(), "kb": kb, "version": version,
                              "name": f"{kb}-{generator}-{size}-s{seed}"}


def open_saved_panel(settings: Any) -> None:
    """Open a saved set in the review table."""
    saved = get_test_sets().list_sets()
    if not saved:
        return
    c1, c2 = st.columns([3, 1])
    name = c1.selectbox(t("Or review a saved set"), [s.name for s in saved], key="eval_ts_open_name")
    c2.write("")
    if c2.button(t("Open"), key="eval_ts_open"):
        test_set = get_test_sets().load(name)
        version = st.session_state.get(BASE, {}).get("version", 0) + 1
        st.session_state[BASE] = {"items": list(test_set.items), "meta": dict(test_set.meta), "version": version,
                                  "kb": test_set.meta.get("knowledge_base") or selected_kb(), "name": name}


# ------------------------------------------------------------------------------------------ review
def review_frame(items: Sequence[TestItem]) -> pd.DataFrame:
    return pd.DataFrame([{"id": i.id, "review": i.review, AFTER: " / ".join(turn.content for turn in i.history),
                          "query": i.query, "answer": i.answer or "",
                          NO_ANSWER: not i.should_answer, "kind": i.kind, "source": i.source or ""} for i in items],
                        columns=COLUMNS)


def apply_edits(items: Sequence[TestItem], edited: pd.DataFrame) -> tuple[TestItem, ...]:
    """The items with the table's edits applied through `review_item` (an edited question or answer makes the
    item "edited" unless a review state was chosen too)."""
    out = tuple(items)
    for item, row in zip(items, edited.to_dict("records")):
        state = row["review"] if row["review"] != item.review else None
        query = row["query"] if row["query"] != item.query else None
        text = row["answer"] if isinstance(row["answer"], str) else ""  # a cleared cell is None
        answer = text if text != (item.answer or "") else None
        should = not row[NO_ANSWER] if bool(row[NO_ANSWER]) == item.should_answer else None
        if state or query is not None or answer is not None or should is not None:
            out = review_item(out, item.id, state=state, query=query, answer=answer, should_answer=should)
    return out


def highlighted(content: str, answer: str | None) -> str:
    """The chunk as HTML with the answer marked where it occurs (whitespace-normalised)."""
    span = find_normalised(answer, content) if answer else None
    if span is None:
        return esc(content)
    start, end = span
    return f"{esc(content[:start])}<mark>{esc(content[start:end])}</mark>{esc(content[end:])}"


def source_chunk_html(content: str, answer: str | None) -> str:
    """The source chunk as the knowledge base holds it, the answer marked: escaped once and drawn as HTML (st.html),
    never read as Markdown, which would turn some lines into headings, end the block at a code fence and show the
    escapes inside code (`&#x27;`). An answer is a verbatim quote of this text, so the text is shown as it is."""
    return ('<div class="source-chunk" style="white-space:pre-wrap;word-break:break-word;font-size:0.9rem;'
            'line-height:1.55;padding:0.6rem 0.8rem;border:1px solid #d5dbe3;border-radius:0.5rem;'
            f'background:#fff;max-height:480px;overflow-y:auto">{highlighted(content, answer)}</div>')


def review_table(settings: Any) -> None:
    """The review table of the generated (or opened) set, an item's source chunk with its answer marked, and
    saving under a name."""
    base = st.session_state.get(BASE)
    if not base:
        return
    items: list[TestItem] = base["items"]
    st.subheader(t("Review ({n} items from {kb})", n=len(items), kb=base["kb"]))
    meta = base["meta"]
    rejected = meta.get("rejected") or {}
    st.caption(t("generator {generator}{model} · seed {seed} · rejected: {rejected}",
                 generator=generator_name(meta["generator"]) if meta.get("generator") else t("manual"),
                 model=" · " + meta["model"] if meta.get("model") else "", seed=meta.get("seed", "-"),
                 rejected=counts_text(rejected, REJECTED_NAMES, ", ") or t("none")))
    for warning in meta.get("warnings") or []:
        if warning != OFFLINE_WARNING:
            st.warning(warning)
    if meta.get("generator") == "offline":
        offline_warning()
    editor_key = f"eval_ts_editor_{base['version']}"
    edited = st.data_editor(
        review_frame(items), key=editor_key, hide_index=True, num_rows="fixed",
        disabled=["id", AFTER, "kind", "source"],
        column_config=headers(
            COLUMNS,
            review=st.column_config.SelectboxColumn(column_header("review"), options=list(REVIEW_STATES),
                                                    required=True, format_func=lambda v: review_name(str(v)),
                                                    help=t("accepted, dropped (kept in the file, left out of runs), "
                                                           "edited, unreviewed")),
            query=st.column_config.TextColumn(column_header("query"), required=True, width="large"),
            answer=st.column_config.TextColumn(column_header("answer"),
                                               help=t("a verbatim quote of the source chunk")),
            **{NO_ANSWER: st.column_config.CheckboxColumn(column_header(NO_ANSWER), help=t(
                "the knowledge base should not answer it: answer scoring expects a refusal"))}))
    reviewed = apply_edits(items, edited)
    if reviewed != tuple(items):  # kept with the set, not only in the widget; drawn again with its review state
        st.session_state[BASE] = {**base, "items": list(reviewed)}
        st.rerun()
    counts = TestSet("review", reviewed).counts()
    st.caption(counts_text(counts))

    ids = [i.id for i in reviewed]
    c1, c2 = st.columns([1, 3])
    chosen = c1.selectbox(t("Item"), ids, key="eval_ts_item",
                          format_func=lambda i: f"{i}: {next(x.query for x in reviewed if x.id == i)[:40]}")
    item = reviewed[ids.index(chosen)]
    with c2:
        content = source_chunk(get_workbench(base["kb"]).store, item) if item.source else None
        unanswerable = t(" · should not be answerable") if not item.should_answer else ""
        for turn in item.history:  # a follow-up's earlier turns, read-only: editing the question keeps them
            st.caption(t("Asked before: {text}", text=turn.content) if turn.role == "user" else
                       t("Answered before: {text}", text=turn.content))
        st.markdown(f"**{esc(item.query)}** — `{review_name(item.review)}`{unanswerable} · {esc(item.source or '')}",
                    unsafe_allow_html=True)
        if content is None:
            st.caption(t("No source chunk (an item no chunk answers, or the chunk is no longer in the knowledge "
                         "base)."))
        else:
            st.html(source_chunk_html(content, item.answer))
        b1, b2, b3 = st.columns(3)
        actions = {"accept": b1.button(t("Accept"), key="eval_ts_accept"),
                   "drop": b2.button(t("Drop"), key="eval_ts_drop"),
                   "mark": b3.button(t("Should not be answerable") if item.should_answer else t("Answerable"),
                                     key="eval_ts_mark", disabled=not item.relevant and not item.should_answer)}
    if any(actions.values()):
        if actions["mark"]:
            changed = review_item(reviewed, item.id, should_answer=not item.should_answer)
        else:
            changed = review_item(reviewed, item.id, state="accepted" if actions["accept"] else "dropped")
        st.session_state[BASE] = {**base, "items": list(changed), "version": base["version"] + 1}
        st.rerun()

    c1, c2 = st.columns([3, 1])
    name = c1.text_input(t("Save as"), base.get("name", ""), key=f"eval_ts_name_{base['version']}",
                         help=t("Saved in {where}; offered in the set pickers and by name on the command line "
                                "(`eval NAME`, `eval answers NAME`).", where=get_test_sets().where))
    c2.write("")
    if c2.button(t("Save test set"), type="primary", key="eval_ts_save"):
        path = get_test_sets().save(name, reviewed, {**meta, "reviewed": counts})
        st.success(t("Saved {n} items as `{name}` ({path}).", n=len(reviewed), name=name, path=path))


# ------------------------------------------------------------------------------------------ answers
def answers_view(settings: Any) -> None:
    """Run the agent on a saved set and score its answers; metrics, a per-item table with debugger links."""
    saved = get_test_sets().list_sets()
    if not saved:
        st.info(t("Save a test set first (Test sets tab), or `python -m rag_core eval generate --name NAME`."))
        return
    names = readable_kbs()
    c1, c2, c3 = st.columns([2, 2, 1])
    set_name = c1.selectbox(t("Test set"), [s.name for s in saved], key="eval_ans_set")
    test_set = get_test_sets().load(set_name)
    made_from = test_set.meta.get("knowledge_base")
    default = made_from if made_from in names else selected_kb()
    kb = c2.selectbox(t("Knowledge base"), names, index=names.index(default) if default in names else 0,
                      key="eval_ans_kb")
    sample = int(c3.number_input(t("Sample (0 = all)"), min_value=0, value=0, key="eval_ans_sample"))
    offline = st.checkbox(t("Offline agent (extractive answers, no model)"), key="eval_ans_offline",
                          help=t("Otherwise the chat page's agent: the configured model, its tools and settings."))
    if test_set.meta.get("generator") == "offline":
        offline_warning()
    if st.button(t("Score the answers"), type="primary", key="eval_ans_run"):
        kb_conf = kb_settings(kb)
        workbench = get_workbench(kb)  # the chat page's agent, its turns not recorded as conversations
        if offline:
            workbench = replace(workbench, settings=kb_conf.with_overrides({"chat.provider": "offline"},
                                                                            "the Evaluation page"))
        agent = build_agent(workbench, record=False)
        bar = st.progress(0.0, text=t("Answering…"))

        def on_progress(p: EvalProgress) -> None:
            bar.progress(p.fraction, text=f"{p.done}/{p.total} — {p.detail}")

        run = score_answers(agent, test_set, judge=build_eval_model(kb_conf, "judge"), sample=sample or None,
                            progress=on_progress)
        with closing(build_eval_runs(settings)) as store:
            kept = store.save(run.to_dict())
        bar.progress(1.0, text=t("Done in {seconds} s — saved to {path}", seconds=f"{run.seconds:.1f}",
                                 path=kept.where))
        st.session_state[LAST_ANSWERS] = {"run": run.to_dict(), "kb": kb}
    if LAST_ANSWERS in st.session_state:
        render_answers(st.session_state[LAST_ANSWERS]["run"], st.session_state[LAST_ANSWERS]["kb"])


def render_answers(run: Mapping[str, Any], kb: str) -> None:
    s = run["summary"]
    st.markdown(t("**{set}** — {items} items ({unanswerable} should not be answerable) on `{kb}`, agent: {agent}",
                  set=run["set"], items=s["items"], unanswerable=s["unanswerable"], kb=kb,
                  agent=run["config"]["agent"]))
    cols = st.columns(len(FIGURES))
    for col, (name, label) in zip(cols, FIGURES.items()):
        value = s.get(name)
        col.metric(t(label), t("absent") if name == "faithfulness" and s.get("faithfulness_note") else
                   "–" if value is None else f"{value:.3f}")
    if s.get("faithfulness_note"):
        st.caption(t("Faithfulness absent: {note}.", note=known_text(s["faithfulness_note"])))
    for warning in run.get("warnings", []):
        st.warning(warning)
    rows = [{"id": r["id"], "query": r["query"], "answer": (r["answer"] or "")[:300],
             "citations": ", ".join(r["citations"]), "found": r["answer_found"], "f1": r["f1"],
             "valid": r["citations_valid"], "support": r["citation_support"], "refused": r["refused"],
             "faithfulness": r.get("faithfulness"),
             "verdicts": ", ".join((r.get("judge") or {}).get("verdicts") or []),
             "debugger": debugger_url(r["query"], None, (r.get("relevant") or [None])[0], kb=kb)}
            for r in run["items"]]
    table = pd.DataFrame(rows)
    st.dataframe(table, hide_index=True, key="eval_ans_items",
                 column_config=headers(table.columns, debugger=link_column()))


def safe(render: Any, *args: Any) -> None:
    """A section whose RagError is its message, so one failing section leaves the others."""
    try:
        render(*args)
    except RagError as exc:
        show_error(exc)
