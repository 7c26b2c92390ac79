"""Every option of a lookup is declared once (rag_core.retrieval.options) and every surface takes it: the CLI's
`search` and `explain` flags, `/v1/search` and `/v1/explain`'s query parameters, the MCP tools `search` and
`explain`, the retrieval debugger's controls and the URL keys they are bound to, and `config`'s per-lookup column.
A new option that a surface lacks fails here."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from rag_core.cli import parser as cli_parser
from rag_core.config import load_settings
from rag_core.retrieval import params_from_settings
from rag_core.retrieval.options import LOOKUP_OPTIONS, OPTIONS, given, lookup_overrides, per_lookup

SEARCH = {o.surface_name for o in LOOKUP_OPTIONS}
EXPLAIN = {o.surface_name for o in LOOKUP_OPTIONS if o.explain}


def flags(command: str) -> set[str]:
    parser = cli_parser.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {s for a in sub.choices[command]._actions for s in a.option_strings}


@pytest.mark.parametrize(("command", "names"), [("search", SEARCH), ("explain", EXPLAIN)])
def test_the_cli_has_a_flag_for_every_option(command: str, names: set[str]) -> None:
    wanted = {"--" + n.replace("_", "-") for n in names}
    assert wanted <= flags(command)
    if command == "explain":
        assert not {"--" + o.name.replace("_", "-") for o in LOOKUP_OPTIONS if not o.explain} & flags(command)


def test_the_http_routes_take_every_option_as_a_query_parameter() -> None:
    import inspect

    from rag_core.service.native import explain_options, search_options

    # and the conversation before the query (`history`), which is not an option of the debugger's controls
    assert set(inspect.signature(search_options).parameters) == SEARCH | {"history"}
    assert set(inspect.signature(explain_options).parameters) == EXPLAIN | {"history"}


def test_the_mcp_tools_take_every_option(tmp_path) -> None:
    from rag_core.mcp import Library, build_server
    from tests.service.live import run_async

    server = build_server(Library(kbs=None))  # type: ignore[arg-type]  # listing tools opens nothing
    tools = {t.name: t for t in run_async(server.list_tools())}
    assert SEARCH <= set(tools["search"].input_schema["properties"])
    assert EXPLAIN <= set(tools["explain"].input_schema["properties"])
    assert not (SEARCH - EXPLAIN) & set(tools["explain"].input_schema["properties"])
    described = tools["search"].input_schema["properties"]["retrieve_k"]
    assert described["description"] == OPTIONS["retrieve_k"].description


def test_config_names_the_option_of_every_setting_an_option_overrides() -> None:
    shown = per_lookup()
    for o in LOOKUP_OPTIONS:
        if o.setting:
            for mode in ("dense", "bm25", "hybrid"):
                assert f"`{o.flag_name}`" in shown[o.setting.format(mode=mode)]


def test_the_debugger_binds_a_control_to_every_option() -> None:
    # The page's controls are made per group (ui.controls); every option's group is one the page shows, and each
    # control is bound to the URL under the option's name. tests/ui/test_ui_debugger.py runs the page.
    import pathlib

    page = (pathlib.Path(__file__).parent.parent / "pages" / "debugger.py").read_text(encoding="utf-8")
    for group in {o.group for o in LOOKUP_OPTIONS} - {"query"}:
        assert f'controls("{group}"' in page, group
    assert 'control(OPTIONS["mode"]' in page


@pytest.mark.parametrize("surface", [
    {"retrieve_k": 7, "return_n": 3, "mode": "bm25", "no_rerank": True, "filter": ["type=md"], "doc_id": ["a.md"]},
    {"fusion": "rrf", "rrf_k": 10, "dense_weight": 0.3, "cross_language": False, "rerank_candidates": 4},
    {"score_threshold": 0.5, "mode": "dense"},
])
def test_an_option_reaches_the_lookup_as_its_setting_would(tmp_path, surface: dict[str, Any]) -> None:
    from dataclasses import replace

    from rag_core.retrieval.params import with_threshold

    args = lookup_overrides(given(surface), load_settings(tmp_path))
    chosen = replace(params_from_settings(load_settings(tmp_path)),
                     **{k: v for k, v in args.items() if v is not None and k != "score_threshold"})
    if args["score_threshold"] is not None:
        chosen = with_threshold(chosen, args["score_threshold"])
    for name, value in surface.items():
        option = OPTIONS[name.removeprefix("no_")]
        assert option.value_in(chosen) == ((not value) if option.flag else value), name


def test_bad_values_are_refused_by_the_setting_s_rules(tmp_path) -> None:
    from rag_core.errors import ConfigError

    settings = load_settings(tmp_path)
    for bad in ({"retrieve_k": 0}, {"mode": "psychic"}, {"dense_weight": 2.0}, {"rerank_candidates": 0}):
        with pytest.raises(ConfigError):
            lookup_overrides(bad, settings)
    with pytest.raises(ValueError, match="not lookup options: nope"):
        lookup_overrides({"nope": 1}, settings)
