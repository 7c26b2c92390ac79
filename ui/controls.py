"""The retrieval debugger's controls, built from the declaration of a lookup's options (rag_core.retrieval.options):
one widget per option, bound to the URL query parameter of the option's name (so links pre-fill a lookup), starting
at the knowledge base's defaults, disabled while the option does not matter (fusion outside hybrid search). The
values they return go through `lookup_overrides` as the CLI's flags, the API's parameters and the MCP tools'
arguments do."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from rag_core.retrieval import LookupParams
from rag_core.retrieval.options import LOOKUP_OPTIONS, LookupOption
from rag_core.scope import split_terms

from .i18n import t
from .kbs import setting_help
from .lookup import URLBound

BOUND: URLBound = {"bind": "query-params", "persist_state": "session"}
LIMITS = {o.name: int(o.top) for o in LOOKUP_OPTIONS if o.group == "width" and o.top}  # the width sliders' maxima


def options_of(group: str) -> list[LookupOption]:
    return [o for o in LOOKUP_OPTIONS if o.group == group]


def control(option: LookupOption, defaults: LookupParams, where: Any = st, *, values: dict[str, Any] | None = None,
            documents: Sequence[str] = (), origins: Mapping[str, str] | None = None, **words: Any) -> Any:
    """The widget of `option` in `where` (a column or container), its value (None when it does not matter with the
    `values` chosen so far, or when left empty: the default). `words` fill the label's fields ({mode},
    {reranker}); `origins` (setting -> where the knowledge base's value came from: ui.kbs.origin_helps) follow the
    setting's help."""
    disabled = values is not None and not option.applies(values)
    label = t(option.label, **words)
    start = option.value_in(defaults)
    helped = {"help": "\n\n".join(filter(None, (setting_help(option.setting), (origins or {}).get(option.setting))))
              } if option.setting and "{" not in option.setting else {}
    common: dict[str, Any] = {"key": option.name, "disabled": disabled, **BOUND}
    value: Any
    if option.widget == "choice":
        value = where.segmented_control(label, list(option.choices), default=start, required=True, **helped, **common)
    elif option.widget == "toggle":
        value = where.toggle(label, value=bool(start), **helped, **common)
    elif option.widget == "text":
        text = where.text_input(label, placeholder=t("e.g. folder=runbooks/ type=md"), help=t(
            "Space-separated key=value (a value with spaces in quotes: team=\"site reliability\"): one key's values "
            "OR (type=md,html or type=md type=html), different keys AND; folder=a/ matches a folder and below. Keys: "
            "folder, type, ingested, front-matter fields, tags."), **common)
        value = split_terms(text) if text.strip() else None
    elif option.widget == "documents":
        value = where.multiselect(label, list(documents), placeholder=t("every document"), **common) or None
    elif option.kind is float and option.widget == "number":  # a threshold: empty = the setting's
        value = where.number_input(label, min_value=0.0, value=None, step=0.01, format="%.4f",
                                   placeholder=t("{value:g} (setting)", value=float(start or 0.0)), help=t(
                                       "Hits scoring below it are dropped; rag.score-threshold.{mode} is the default. "
                                       "Scores of different search modes are not comparable.", **words), **common)
    elif option.widget == "number":
        value = where.number_input(label, int(option.ge or 0), int(option.top or option.le or 10**9), int(start),
                                   **helped, **common)
    elif option.kind is float:
        value = where.slider(label, 0.0, float(option.top or 1.0), float(start), 0.05, **helped, **common)
    else:  # a width slider: a default beyond its end starts at its end
        top = int(option.top or option.le or 1000)
        value = where.slider(label, 1, top, min(int(start), top), **helped, **common)
    return None if disabled else value


def controls(group: str, defaults: LookupParams, values: dict[str, Any], *, columns: bool = True,
             per_row: int | None = None, origins: Mapping[str, str] | None = None, **words: Any) -> dict[str, Any]:
    """The controls of every option of `group`, side by side in columns (`per_row` in each row: a choice of three
    stays whole at 1280 px), or one under the other; their values are added to `values` (which later options'
    `when` reads) and returned."""
    found = options_of(group)
    width = per_row or len(found)
    places = [place for at in range(0, len(found), width) for place in st.columns(width)][:len(found)] \
        if columns and len(found) > 1 else [st] * len(found)
    for option, where in zip(found, places):
        values[option.name] = control(option, defaults, where, values=values, origins=origins, **words)
    return values
