from pathlib import Path

import pytest

from rag_core.config import KEYS, env_name, load_settings, redact_uri
from rag_core.errors import ConfigError
from rag_core.retrieval import params_from_settings


def test_defaults_match_the_seed(tmp_path: Path) -> None:
    s = load_settings(data_dir=tmp_path, env={})
    assert s["chunk.max-size"] == 800 and s["chunk.overlap"] == 100
    assert s["milvus.collection"] == "biz"
    assert s["rag.max-chunks-per-document"] == 2
    assert s.milvus_uri == str(tmp_path / "milvus.db")
    assert s.explicit == frozenset()


def test_env_names_are_derived_from_keys() -> None:
    assert env_name("chunk.max-size") == "RAG_CHUNK_MAX_SIZE"
    assert env_name("rag.retrieve-k") == "RAG_RETRIEVE_K"
    assert len({env_name(k) for k in KEYS}) == len(KEYS)


def test_file_then_env_then_overrides(tmp_path: Path) -> None:
    cfg = tmp_path / "rag.toml"
    cfg.write_text('[chunk]\nmax-size = 600\noverlap = 50\n[rag]\nreturn-n = 3\n', encoding="utf-8")
    s = load_settings(tmp_path, cfg, env={"RAG_CHUNK_OVERLAP": "80", "MILVUS_URI": "http://u:p@h:19530"})
    assert (s["chunk.max-size"], s["chunk.overlap"], s["rag.return-n"]) == (600, 80, 3)
    assert s.milvus_uri == "http://u:p@h:19530"
    assert s.public()["milvus.uri"] == "http://***@h:19530"
    s2 = load_settings(tmp_path, cfg, env={"RAG_CHUNK_OVERLAP": "80"}, overrides={"chunk.overlap": "10"})
    assert s2["chunk.overlap"] == 10 and s2.is_set("chunk.overlap") and not s2.is_set("rag.retrieve-k")


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        ({"chunk.max-sise": 5}, "Did you mean chunk.max-size?"),
        ({"chunk.max-size": "big"}, "not a valid int"),
        ({"chunk.max-size": 500, "chunk.overlap": 500}, "must be smaller than chunk.max-size"),
        ({"chunk.max-size": 0}, "at least 20"),
        ({"rag.search-mode": "magic"}, "must be one of: dense, bm25, hybrid"),
        ({"milvus.collection": 'x" or 1'}, "not a valid knowledge base name"),
        ({"rag.retrieve-k": True}, "not a valid int"),
    ],
)
def test_bad_values_get_clear_errors(tmp_path: Path, overrides: dict, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment.replace("?", r"\?").replace("(", r"\(")):
        load_settings(tmp_path, env={}, overrides=overrides)


def test_bad_toml_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "rag.toml"
    bad.write_text("[chunk\nmax-size=1", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(tmp_path, bad, env={})
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path, tmp_path / "nope.toml", env={})
    with pytest.raises(ConfigError, match=r"\$RAG_RETRIEVE_K"):
        load_settings(tmp_path, env={"RAG_RETRIEVE_K": "many"})


def test_legacy_top_k_is_the_fallback_for_each_width(tmp_path: Path) -> None:
    def widths(env: dict) -> tuple[int, int]:
        p = params_from_settings(load_settings(tmp_path, env=env))
        return p.retrieve_k, p.return_n

    assert widths({}) == (20, 5)
    assert widths({"RAG_TOP_K": "8"}) == (8, 8)
    assert widths({"RAG_TOP_K": "8", "RAG_RETRIEVE_K": "30"}) == (30, 8)
    assert widths({"RAG_TOP_K": "8", "RAG_RETURN_N": "3"}) == (8, 3)
    assert widths({"RAG_RETRIEVE_K": "30", "RAG_RETURN_N": "3"}) == (30, 3)


def test_projection_items_default_to_return_n(tmp_path: Path) -> None:
    assert params_from_settings(load_settings(tmp_path, env={"RAG_RETURN_N": "7"})).budgets.max_items == 7


def test_redact_uri() -> None:
    assert redact_uri("https://root:Milvus@example:19530/db") == "https://***@example:19530/db"
    assert redact_uri("./data/milvus.db") == "./data/milvus.db"
    assert redact_uri("http://h/v1?token=t0k&x=1&Secret-Key=s;sig=9") == "http://h/v1?token=***&x=1&Secret-Key=***;sig=***"


@pytest.mark.parametrize("raw", ["nan", "inf", "-inf", "NaN", "Infinity", float("nan"), float("inf")])
@pytest.mark.parametrize("key", [k for k, v in KEYS.items() if v.type is float])
def test_non_finite_numbers_are_refused_for_every_float_setting(tmp_path: Path, key: str, raw) -> None:
    with pytest.raises(ConfigError, match=f"{key} = .* is not a finite number"):
        load_settings(tmp_path, env={}, overrides={key: raw})


def test_non_finite_numbers_from_toml_and_environment(tmp_path: Path) -> None:
    cfg = tmp_path / "rag.toml"
    cfg.write_text("[rag]\ndense-weight = nan\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"rag.dense-weight = nan \(from .*rag.toml\) is not a finite number"):
        load_settings(tmp_path, cfg, env={})
    with pytest.raises(ConfigError, match=r"\$RAG_BM25_WEIGHT\) is not a finite number"):
        load_settings(tmp_path, env={"RAG_BM25_WEIGHT": "inf"})
    cfg.write_text("[chunk]\nmax-size = inf\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not a valid int"):
        load_settings(tmp_path, cfg, env={})


def test_config_file_that_is_a_folder_and_data_dir_that_is_a_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a folder; give the path of a rag.toml file"):
        load_settings(tmp_path, tmp_path, env={})
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    with pytest.raises(ConfigError, match=r"notes.txt \(--data-dir or \$RAG_DATA_DIR\) is a file, not a folder"):
        load_settings(a_file, env={})
    with pytest.raises(ConfigError, match="which is a file"):
        load_settings(a_file / "sub", env={})
    with pytest.raises(ConfigError, match="is a file"):
        load_settings(env={"RAG_DATA_DIR": str(a_file)})
    assert load_settings(tmp_path / "new" / "dir", env={}).data_dir == tmp_path / "new" / "dir"  # created later


def test_the_configuration_table_is_generated_from_the_settings() -> None:
    from rag_core.config import settings_table
    from rag_core.retrieval.options import per_lookup
    from tests.helpers import REPO

    page = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    begin = page.index("| key | default | environment | per lookup | meaning |")
    end = page.index("<!-- end of settings table -->")
    assert page[begin:end] == settings_table(per_lookup()), (
        "docs/configuration.md's settings table differs from the settings: replace it with the output of "
        "`python -m rag_core config --markdown`")
    assert "`chat.provider` | `'auto'`" in page and "chat.base-url and its key are set" in page


def test_the_readme_shows_the_settings_defaults_as_they_are() -> None:
    # The README lists the settings people change most, with their defaults: each must be the setting's own.
    import re

    from tests.helpers import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "docs/configuration.md" in readme and "| key | default | environment | meaning |" not in readme
    rows = re.findall(r"^\| `([a-z0-9.-]+)` \| `([^`]*)` \|", readme, re.M)
    assert len(rows) >= 10
    for name, default in rows:
        assert name in KEYS and default == repr(KEYS[name].default), (name, default)


def test_every_setting_has_a_one_line_help() -> None:
    for key in KEYS.values():
        assert key.help.strip() and "\n" not in key.help, key.name
