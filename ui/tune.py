"""The Evaluation page's Tune tab: a knowledge base's search settings tuned on one of its saved test sets
(rag_core.evaluation.tune, as `eval tune`), the result with its held-out gain and interval, and the Apply / Revert
buttons. Widgets and rendering only."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from rag_core.access.records import Role
from rag_core.bootstrap import build_rewriter, factories
from rag_core.errors import RagError
from rag_core.evaluation.params import LABELS, choices_of, parse_values
from rag_core.evaluation.testsets import load_set
from rag_core.evaluation.tune import (
    AGREEMENT,
    DEFAULT_VALUES,
    agreeing,
    allowed_params,
    apply_tuning,
    generators_of,
    revert_tuning,
    tune,
)

from .access import allowed, record, refusal
from .errors import show_error
from .evaluation import param_label
from .i18n import t
from .state import get_test_sets, get_workbench, knowledge_bases, readable_kbs, selected_kb

RESULT = "eval_tune_result"
KINDS: dict[str, type] = {"fusion": str, "dense_weight": float, "retrieve_k": int, "max_chunks_per_document": int}
NOTICE = "eval_tune_notice"


def set_scope_line(name: str, generators: list[str], params: tuple[str, ...], measured: bool = False) -> str:
    """What the chosen set may tune, in one line: all for hand labels; for a generated set what a measurement lists
    (`measured`: whether there is one, bench/tune_agreement.py)."""
    if not generators:
        return t("{set} is hand-labelled: it tunes fusion, dense weight, retrieve-k and the per-document cap.",
                 set=name)
    if not measured:
        return t("{set} was generated ({generators}), and no measurement says which settings tuned on generated "
                 "questions choose as real labels do ({file}): it tunes nothing. Tune on a hand-labelled set.",
                 set=name, generators="/".join(generators), file=AGREEMENT.name)
    if not params:
        return t("{set} was generated ({generators}): measured against real labels on public test sets "
                 "(bench/README.md, “Tuning on generated sets vs real labels”), no setting tuned on such questions "
                 "chose as real labels did, so it tunes nothing. Tune on a hand-labelled set.",
                 set=name, generators="/".join(generators))
    return t("{set} was generated ({generators}): it tunes only {params}, the settings measured to choose as real "
             "labels do on public test sets (bench/README.md, “Tuning on generated sets vs real labels”).",
             set=name, generators="/".join(generators), params=", ".join(param_label(p) for p in params))


def tune_view(settings: Any) -> None:
    """Pick a knowledge base and a saved set, tune, show the result; Apply / Revert."""
    st.caption(t("Tuning is only as good as the set it runs on: questions generated from the knowledge base's own "
                 "chunks reward matching their words, so a generated set tunes only the settings measured to agree "
                 "with real labels; a hand-labelled set tunes them all. The winner is chosen on one half of the "
                 "queries and checked on the other."))
    if notice := st.session_state.pop(NOTICE, None):
        st.success(notice)
    names = readable_kbs()
    sets = get_test_sets()
    saved = sets.list_sets()
    c1, c2 = st.columns(2)
    kb = c1.selectbox(t("Knowledge base"), names, index=names.index(selected_kb()) if selected_kb() in names else 0,
                      key="eval_tune_kb")
    if not saved:
        st.info(t("No saved test sets yet: generate one in the Test sets tab (or `python -m rag_core eval generate "
                  "--name NAME`)."))
        return
    name = c2.selectbox(t("Test set"), [s.name for s in saved], key="eval_tune_set")
    test_set = sets.load(name)
    generators = generators_of(test_set.items)
    scope = allowed_params(name, generators)
    measured = bool(generators) and agreeing(generators) is not None
    (st.caption if scope.params else st.info)(set_scope_line(name, generators, scope.params, measured))
    editor = allowed(kb, Role.EDITOR)  # tuning runs a sweep, applying changes the knowledge base: an editor's
    if not editor:
        st.caption(f"🔒 {refusal(kb, Role.EDITOR)}")
    values = sweep_values(scope.params)
    if st.button(t("Tune"), type="primary", key="eval_tune_run", disabled=not editor or not scope.params):
        eval_set = load_set(name, saved=sets, live=True)
        bar = st.progress(0.0, text=t("Starting…"))

        def on_progress(p: Any) -> None:
            bar.progress(p.fraction, text=t("{done}/{total} queries", done=format(p.done, ","),
                                            total=format(p.total, ",")))

        result = tune(eval_set, get_workbench(kb), settings, factories(), scope, values=values,
                      rewriter=build_rewriter(settings), progress=on_progress)
        bar.progress(1.0, text=t("Done"))
        st.session_state[RESULT] = result.to_dict()
    found = st.session_state.get(RESULT)
    if found and found["kb"] == kb:
        render_result(found, editor)
    revert_panel(kb, editor)


def sweep_values(params: tuple[str, ...]) -> dict[str, list[Any]]:
    """The values to sweep of each parameter the set may tune (the knowledge base's own is always added)."""
    values: dict[str, list[Any]] = {}
    with st.expander(t("Values to sweep (the knowledge base's own are always included)")):
        columns = st.columns(max(1, len(params)))
        for column, name in zip(columns, params):
            kind = KINDS[name]
            text = column.text_input(param_label(name), ",".join(map(str, DEFAULT_VALUES[name])),
                                     key=f"eval_tune_{name}")
            values[name] = parse_values(text, kind, LABELS[name], choices_of(name) or None)
    return values


def render_result(found: dict[str, Any], editor: bool) -> None:
    """The winner against the current settings, its held-out gain with the interval, and Apply."""
    st.markdown(t("**{set}** on **{kb}**: {tuning} tuning and {held_out} held-out queries (seed {seed}), {points} "
                  "points.", set=found["set"], kb=found["kb"], tuning=len(found["tuning_queries"]),
                  held_out=len(found["held_out_queries"]), seed=found["seed"], points=found["points"]))
    rows = [{t("Setting"): key, t("Current"): str(found["current"][key]), t("Winner"): str(found["winner"][key])}
            for key in found["current"]]
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="eval_tune_table")
    c1, c2, c3 = st.columns(3)
    c1.metric(t("nDCG@10 held out, current"), f"{found['held_out']['current']:.3f}")
    c2.metric(t("nDCG@10 held out, winner"), f"{found['held_out']['winner']:.3f}")
    low, high = found["interval"]
    c3.metric(t("Gain (95% interval)"), f"{found['gain']:+.3f}", help=t("{low} to {high}, paired bootstrap over the "
                                                                          "held-out queries", low=format(low, "+.3f"),
                                                                          high=format(high, "+.3f")))
    for warning in found["warnings"][:5]:
        st.caption(warning)
    if not found["changes"]:
        st.info(t("Its own settings are the best on the tuning half: nothing to apply."))
        return
    if found["real"]:
        st.success(t("A real gain: the interval lies above 0."))
    else:
        st.warning(t("Within noise: the interval reaches 0 or below, so this winner may only be luck."))
    label = t("Apply") if found["real"] else t("Apply anyway")
    if st.button(label, key="eval_tune_apply", disabled=not editor):
        try:
            kb = apply_tuning(knowledge_bases(), found, force=not found["real"])
        except RagError as exc:
            show_error(exc)
            return
        record("kbs.set", kb.name, kb.name, **found["changes"], tuned_on=found["set"])
        st.session_state.pop(RESULT, None)
        st.session_state[NOTICE] = t("Applied to {kb}: {changes}.", kb=kb.name, changes=", ".join(
            f"{k} = {v}" for k, v in found["changes"].items()))
        st.rerun()


def revert_panel(kb: str, editor: bool) -> None:
    """The last applied tuning of `kb`, if any, and Revert."""
    entry = knowledge_bases().get(kb)
    tuning = entry.provenance.get("tuning")
    if not tuning:
        return
    st.caption(t("{kb} keeps the settings tuned on {set} at {at}; Revert puts back {previous}.", kb=kb,
                 set=tuning.get("set"), at=tuning.get("applied_at") or tuning.get("at"), previous=", ".join(
                     f"{k} = {v}" for k, v in (tuning.get("previous") or {}).items())))
    if st.button(t("Revert"), key="eval_tune_revert", disabled=not editor):
        try:
            _, back, _ = revert_tuning(knowledge_bases(), kb)
        except RagError as exc:
            show_error(exc)
            return
        record("kbs.set", kb, kb, **back, reverted="tuning")
        kept = [key for key in (tuning.get("previous") or {}) if key not in back]  # changed by hand since: `notes`
        st.session_state[NOTICE] = (t("Reverted the tuning of {kb}.", kb=kb) if not kept else t(
            "Reverted the tuning of {kb}; kept {settings}, changed by hand since.", kb=kb, settings=", ".join(kept)))
        st.rerun()
