"""Widgets for the settings a knowledge base keeps (the Knowledge base page's create and copy forms)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from rag_core.config import KEYS
from rag_core.embedding.fusion_defaults import FUSION_KEYS


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
    number(c1, "chunk.max-size", "Max chunk size", 50)
    number(c2, "chunk.overlap", "Overlap", 10)
    choice(c3, "embedding.provider", "Embedder")
    choice(c4, "rag.search-mode", "Search mode")
    c1, c2, c3, c4 = st.columns(4)
    number(c1, "rag.retrieve-k", "retrieve-k")
    number(c2, "rag.return-n", "return-n")
    number(c3, "rag.max-chunks-per-document", "Max chunks per document")
    choice(c4, "rag.fusion", "Fusion (hybrid)")
    with st.expander("More settings"):
        c1, c2, c3 = st.columns(3)
        number(c1, "rag.dense-weight", "Dense weight", 0.05)
        number(c2, "rag.bm25-weight", "BM25 weight", 0.05)
        number(c3, "rag.rrf-k", "RRF k")
        c1, c2 = st.columns(2)
        out["embedding.model"] = c1.text_input("Embedding model (empty: the provider's default)",
                                               values["embedding.model"], key=f"{prefix}.embedding.model",
                                               help=KEYS["embedding.model"].help)
        number(c2, "embedding.dimension", "Embedding dimension (0: the provider's default)")
    return out


def given(values: Mapping[str, Any], shown: Mapping[str, Any]) -> dict[str, Any]:
    """The form's values without the fusion settings left as shown, so that a knowledge base made with another
    embedder gets the fusion measured for it (rag_core.kb.settings.with_measured_fusion) unless they were changed."""
    return {key: value for key, value in values.items() if key not in FUSION_KEYS or value != shown.get(key)}
