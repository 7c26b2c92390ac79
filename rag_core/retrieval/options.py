"""The options of a lookup, declared once (`LOOKUP_OPTIONS`), and how given values become
`KnowledgeRetriever.lookup(...)` keyword arguments (`lookup_overrides`).

Every surface is built from the declaration: the CLI's flags of `search` and `explain` (cli/options.py), the query
parameters of `/v1/search` and `/v1/explain` (service/native.py), the arguments of the MCP tools `search` and
`explain` (mcp/server.py), the retrieval debugger's controls and the URL keys they are bound to (ui/controls.py), and
the "per lookup" column of `config --markdown` (config.py's table in docs/configuration.md). tests/test_options.py
fails when a surface lacks one. A new option is one `LookupOption(...)` line here; one that overrides a setting
needs nothing else (its value is checked by that setting's rules, its help is the setting's help); one that
reaches the lookup some other way is read in `lookup_overrides` below.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..config import KEYS, Key, Settings
from ..scope import parse_scope

Widget = Literal["slider", "number", "choice", "toggle", "text", "documents"]


def N_(text: str) -> str:  # noqa: N802 - the gettext marker: `make messages` extracts these labels for the app
    return text


@dataclass(frozen=True)
class LookupOption:
    """One option of a lookup. `name`: its query parameter, MCP argument and debugger URL key (the CLI flag is
    `--name` with dashes). `kind`: int, float, bool, str, or list (repeatable text). `setting`: the setting it
    overrides, whose rules check the value and whose help is the option's (a `{mode}` in it: the setting of the
    lookup's search mode); "" when it overrides none. `param`: where a LookupParams holds its value (a dotted
    attribute path), which the debugger's controls start from. `label`: the debugger's words for it (English, the
    msgid the app's catalogs translate; `{mode}` and `{reranker}` in it are filled in). `widget` and `top`: the
    debugger's control and its largest value. `group`: where the debugger shows it. `explain`: whether "why wasn't
    it retrieved?" takes it too. `flag`: on unless turned off: the CLI's `--no-<name>` switch and the `no_<name>`
    parameter turn it off (the debugger shows it as a toggle). `when`: it only matters while other
    options have these values (hybrid fusion's options in hybrid search)."""

    name: str
    kind: type
    setting: str
    param: str
    label: str
    widget: Widget
    group: Literal["query", "width", "hybrid", "threshold", "rerank", "scope", "context"]
    help: str = ""
    top: float | None = None
    explain: bool = True
    flag: bool = False
    when: tuple[tuple[str, Any], ...] = ()  # it only matters when these options have these values

    def applies(self, values: Mapping[str, Any]) -> bool:
        """Whether it matters with the other options at `values` (the debugger disables it otherwise)."""
        return all(values.get(name) == value for name, value in self.when)

    @property
    def surface_name(self) -> str:
        """Its query parameter and MCP argument: its name, or `no_<name>` for a switch that turns something off."""
        return f"no_{self.name}" if self.flag else self.name

    @property
    def flag_name(self) -> str:
        return "--" + self.surface_name.replace("_", "-")

    @property
    def key(self) -> Key | None:
        """The setting's declaration (its type, choices and range); None for an option that overrides none."""
        return KEYS.get(self.setting.format(mode="hybrid")) if self.setting else None

    @property
    def choices(self) -> tuple[str, ...]:
        return self.key.choices if self.key is not None else ()

    @property
    def description(self) -> str:
        """Its one-line help: its own, else the setting's."""
        only = [f"{name}={value}" for name, value in self.when if isinstance(value, str)]
        where = f" ({' with '.join(only)} only)" if only else ""
        if self.help:
            return self.help
        key = self.key
        return f"{key.help.rstrip('.')}{where}; default: the setting {self.setting}" if key is not None else self.label

    @property
    def annotation(self) -> Any:
        """Its type as an HTTP query parameter or an MCP argument takes it: its choices a Literal, None when not
        given (a flag: a plain bool, false when not given)."""
        if self.flag:
            return bool
        kind: Any = Literal[self.choices] if self.choices else list[str] if self.kind is list else self.kind
        return kind | None

    @property
    def ge(self) -> float | None:
        """The least value its setting allows (pydantic's `ge`)."""
        key = self.key
        return key.min if key is not None and self.kind in (int, float) else None

    @property
    def le(self) -> float | None:
        """The largest value its setting allows (pydantic's `le`); a score threshold has none."""
        key = self.key
        return key.max if key is not None and self.kind in (int, float) and self.name != "score_threshold" else None

    def value_in(self, params: Any) -> Any:
        """Its value in `params` (a LookupParams): what the debugger's control starts at."""
        return operator.attrgetter(self.param)(params)


LOOKUP_OPTIONS: tuple[LookupOption, ...] = (
    LookupOption("retrieve_k", int, "rag.retrieve-k", "retrieve_k", N_("retrieve-k (recall width)"), "slider",
                 "width", top=200),
    LookupOption("return_n", int, "rag.return-n", "return_n", N_("return-n (evidence blocks)"), "slider", "width",
                 top=50),
    LookupOption("max_chunks_per_document", int, "rag.max-chunks-per-document", "max_chunks_per_document",
                 N_("max chunks per document"), "slider", "width", top=10),
    LookupOption("mode", str, "rag.search-mode", "search.mode", N_("Search"), "choice", "query"),
    LookupOption("rewrite", str, "rag.rewrite", "rewrite", N_("Rewrite follow-up questions"), "choice", "query"),
    LookupOption("fusion", str, "rag.fusion", "search.fusion", N_("Fusion"), "choice", "hybrid",
                 when=(("mode", "hybrid"),)),
    LookupOption("rrf_k", int, "rag.rrf-k", "search.rrf_k", N_("RRF k"), "number", "hybrid", top=10_000,
                 when=(("mode", "hybrid"), ("fusion", "rrf"))),
    LookupOption("dense_weight", float, "rag.dense-weight", "search.dense_weight", N_("dense weight"), "slider",
                 "hybrid", top=1.0, when=(("mode", "hybrid"),)),
    LookupOption("bm25_weight", float, "rag.bm25-weight", "search.bm25_weight", N_("bm25 weight"), "slider", "hybrid",
                 top=1.0, when=(("mode", "hybrid"),)),
    LookupOption("cross_language", bool, "rag.cross-language", "search.cross_language",
                 N_("Cross-language stand-ins"), "toggle", "hybrid", when=(("mode", "hybrid"),)),
    LookupOption("score_threshold", float, "rag.score-threshold.{mode}", "score_threshold",
                 N_("score threshold ({mode}; 0 = off)"), "number", "threshold",
                 help="Drop hits scoring below this in the lookup's search mode (0 = off); default: the setting "
                      "rag.score-threshold.<mode>"),
    LookupOption("filter", list, "rag.default-filter", "filter_items", N_("Filter (document metadata)"), "text",
                 "scope", help="Only documents whose metadata match, key=value (repeatable: one key's values OR, "
                 "type=md,html too; keys AND; folder=runbooks/ matches a folder and below; keys: folder, type, "
                 "ingested, front matter, tags)"),
    LookupOption("doc_id", list, "", "doc_ids", N_("Only these documents"), "documents", "scope",
                 help="Only these documents (repeatable)", explain=False),
    LookupOption("rerank", bool, "", "rerank.enabled", N_("Rerank with {reranker}"), "toggle", "rerank",
                 help="Skip the configured reranker (rerank.provider) for this lookup", flag=True),
    LookupOption("rerank_candidates", int, "rerank.candidates", "rerank.candidates",
                 N_("rerank candidates (top hits sent to the model)"), "slider", "rerank", top=200,
                 when=(("rerank", True),)),
    LookupOption("expand", str, "rag.expand", "expand.mode", N_("Expand each block to"), "choice", "context"),
    LookupOption("expand_neighbours", int, "rag.expand-neighbours", "expand.neighbours",
                 N_("neighbouring chunks on each side"), "slider", "context", top=10,
                 when=(("expand", "neighbours"),)),
    LookupOption("parent_max_size", int, "chunk.parent-max-size", "expand.parent_max_size",
                 N_("parent section at most (characters)"), "number", "context", top=65_000,
                 when=(("expand", "parent"),)),
    LookupOption("merge", bool, "rag.merge", "expand.merge", N_("Merge hits whose chunks touch"), "toggle",
                 "context"),
    LookupOption("block_tokens", int, "rag.block-tokens", "budgets.max_tokens_per_item", N_("tokens per block"),
                 "number", "context", top=100_000),
    LookupOption("context_tokens", int, "rag.context-tokens", "budgets.max_total_tokens",
                 N_("tokens in all evidence"), "number", "context", top=1_000_000),
)
OPTIONS = {o.name: o for o in LOOKUP_OPTIONS}
# Options whose value is the setting's: given, they override it for the lookup, checked by its rules.
_PLAIN = {o.name: o.setting for o in LOOKUP_OPTIONS if o.setting and "{" not in o.setting and o.kind is not list}
_WIDTHS = ("retrieve_k", "return_n", "max_chunks_per_document")
_EXPAND = ("expand", "expand_neighbours", "parent_max_size", "merge")
_BUDGETS = ("block_tokens", "context_tokens")


def _given(options: Mapping[str, Any], names: tuple[str, ...]) -> bool:
    return any(options.get(name) is not None for name in names)


def lookup_overrides(options: Mapping[str, Any], settings: Settings) -> dict[str, Any]:
    """`options`: values by option name (missing or None = the configured default). They reach the lookup as the
    debugger's controls do; everything else (the projection's item and character budgets) stays as configured, so
    `search --json` is what the debugger shows. Values are checked by the rules of the setting each option
    overrides before anything runs."""
    from . import params_from_settings

    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"not lookup options: {', '.join(unknown)}")
    given = {key: options[name] for name, key in _PLAIN.items() if options.get(name) is not None}
    mode = given.get("rag.search-mode") or settings["rag.search-mode"]
    threshold = options.get("score_threshold")
    if threshold is not None:  # the threshold of the mode this lookup searches in
        given[OPTIONS["score_threshold"].setting.format(mode=mode)] = threshold
    params = params_from_settings(settings.with_overrides(given, "search options"))
    rerank = None
    if options.get("rerank") is False or options.get("rerank_candidates") is not None:
        rerank = replace(params.rerank, enabled=options.get("rerank") is not False)
    return {**{name: options.get(name) for name in _WIDTHS}, "search": params.search, "rerank": rerank,
            "score_threshold": params.score_threshold if threshold is not None else None,
            "scope": parse_scope(options["filter"]) if options.get("filter") else None,
            "rewrite": options.get("rewrite"),
            "expand": params.expand if _given(options, _EXPAND) else None,
            "budgets": params.budgets if _given(options, _BUDGETS) else None,
            "filters": {"doc_id": list(options["doc_id"])} if options.get("doc_id") else None}


def given(surface: Mapping[str, Any]) -> dict[str, Any]:
    """The options given on a surface that names them by `surface_name` (query parameters, MCP arguments), by
    option name: a switch `no_<name>` set gives <name> False, else nothing."""
    out = {o.name: surface.get(o.surface_name) for o in LOOKUP_OPTIONS if not o.flag}
    out.update({o.name: False for o in LOOKUP_OPTIONS if o.flag and surface.get(o.surface_name)})
    return out


def per_lookup() -> dict[str, str]:
    """setting -> the option that overrides it for one lookup, as `config` and docs/configuration.md show it: the
    CLI flag and the query parameter / MCP argument / debugger URL key."""
    out: dict[str, str] = {}
    for o in LOOKUP_OPTIONS:
        for mode in ("dense", "bm25", "hybrid") if "{mode}" in o.setting else ("",):
            if o.setting:
                out[o.setting.format(mode=mode)] = f"`{o.flag_name}`, `{o.surface_name}`"
    return out
