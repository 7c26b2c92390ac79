"""The shared resources' cache keys (ui/state.py): every setting the agent depends on is in its key, and
the workbench's key names its database and embedder."""

from __future__ import annotations

import pytest

from rag_core.config import KEYS, load_settings
from ui.state import agent_key, get_agent, workbench_key


def other_value(name: str):
    """A valid value different from the default."""
    key = KEYS[name]
    if key.choices:
        return next(c for c in key.choices if c != key.default)
    if name == "milvus.uri":
        return "/tmp/elsewhere.db"
    if name == "milvus.collection":
        return "other_collection"
    if name == "access.folders":
        return "runbooks/secret/**=sre"
    if key.type is str:
        return key.default + "x"
    if key.type is int:
        return key.default + 1 if key.max is None or key.default + 1 <= key.max else key.default - 1
    if key.type is float:
        return key.default / 2 if key.default else 0.5
    return not key.default


@pytest.mark.parametrize("name", sorted(KEYS))
def test_every_setting_is_in_the_agent_cache_key(tmp_path, name):
    base = load_settings(data_dir=tmp_path, env={}, config_file=None)
    changed = base.with_overrides({name: other_value(name)})
    assert agent_key(changed, env={}) != agent_key(base, env={})


def test_the_embedder_and_reranker_are_part_of_both_keys_and_the_chat_only_of_the_agent(tmp_path):
    base = load_settings(data_dir=tmp_path, env={}, config_file=None)
    for name in ("embedding.provider", "embedding.model", "embedding.dimension", "rerank.provider",
                 "rerank.candidates", "rag.retrieve-k"):
        changed = base.with_overrides({name: other_value(name)})
        assert workbench_key(changed) != workbench_key(base), name
        assert agent_key(changed, env={})[0] != agent_key(base, env={})[0], name
    chat = base.with_overrides({"chat.temperature": 0.9})
    assert workbench_key(chat) == workbench_key(base) and agent_key(chat, env={}) != agent_key(base, env={})


def test_a_new_api_key_makes_a_new_agent_without_the_key_in_the_cache_key(tmp_path):
    settings = load_settings(data_dir=tmp_path, env={}, config_file=None)
    one = agent_key(settings, env={"DASHSCOPE_API_KEY": "sk-first-secret"})
    two = agent_key(settings, env={"DASHSCOPE_API_KEY": "sk-second-secret"})
    assert one != two and "secret" not in repr(one) + repr(two)
    custom = settings.with_overrides({"chat.api-key-env": "MY_CHAT_KEY"})
    assert agent_key(custom, env={"MY_CHAT_KEY": "a"}) != agent_key(custom, env={"MY_CHAT_KEY": "b"})
    # the Loki token (logs.token-env) is read by the agent's query_logs tool
    assert agent_key(settings, env={"LOKI_TOKEN": "a"}) != agent_key(settings, env={"LOKI_TOKEN": "b"})


def test_the_cached_agent_follows_the_settings(kb, monkeypatch):
    first = get_agent()
    assert get_agent() is first
    monkeypatch.setenv("RAG_CHAT_TEMPERATURE", "0.9")
    second = get_agent()
    assert second is not first and get_agent() is second


def test_clearing_the_workbenches_drops_the_agents_over_them(kb):
    # The Knowledge base page clears the cache after deleting a knowledge base: an agent left cached would keep
    # searching the closed store (its key, made of settings, is the same for the reopened workbench).
    from ui.state import clear_workbench, get_workbench

    before = get_agent()
    clear_workbench()
    reopened = get_workbench()
    after = get_agent()
    assert after is not before
    assert reopened.retriever.lookup("disk full").evidence  # the agent's workbench answers again
