"""Widgets for the settings a knowledge base keeps (the Knowledge base page's create and copy forms)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from rag_core.config import KEYS

from .i18n import t


def settings_widgets(prefix: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """Inputs for every setting a knowledge base keeps, filled with `values`; returns {setting: value}. Values
    are checked by the settings' own rules when the knowledge base is made (one clear message)."""
    out: dict[str, Any] = {}

    def number(col: Any, key: str, label: str, step: float | int = 1) -> None:
        k = KEYS[key]
        kind = float if k.type is float else int
        out[key] = col.number_input(label, min_value=kind(k.min) if k.min is not None else None,
                                    max_value=kind(k.max) if k.max is not None else None, value=kind(values[key]),
                                    step=kind(step), key=f"{prefix}.{key}", help=k.help)

    def choice(col: Any, key: str, label: str) -> None:
        k = KEYS[key]
        options = list(k.choices)
        out[key] = col.selectbox(label, options, index=options.index(values[key]), key=f"{prefix}.{key}", help=k.help)

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
        c1, c2 = st.columns(2)
        out["embedding.model"] = c1.text_input(t("Embedding model (empty: the provider's default)"),
                                               values["embedding.model"], key=f"{prefix}.embedding.model",
                                               help=KEYS["embedding.model"].help)
        number(c2, "embedding.dimension", t("Embedding dimension (0: the provider's default)"))
    return out
