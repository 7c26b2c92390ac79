"""The one cached workbench shared by every page and session, and the session-level settings.

`get_workbench()` builds the store, embedder, ingestor and retriever once per data dir and Milvus
target (`st.cache_resource`); clearing the cache closes the store, which releases the Milvus Lite
lock. Pages call `workbench_or_stop()`, which turns a `RagError` (a locked database, a bad setting)
into its message on the page instead of a traceback.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import streamlit as st

from rag_core.bootstrap import DEFAULT_KEY_ENV, Workbench, build_workbench
from rag_core.config import KEYS, Settings, load_settings
from rag_core.errors import RagError, StoreMigrationNeeded

if TYPE_CHECKING:
    from rag_core.agent import Agent

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_KB_DIR = REPO_ROOT / "examples" / "kb"


def get_settings() -> Settings:
    """Settings from rag.toml and the environment (RAG_DATA_DIR isolates a run); cheap, not cached."""
    return load_settings()


def _close(workbench: Workbench) -> None:
    workbench.close()


AGENT_ONLY = ("chat.", "prometheus.", "logs.")  # settings read when the agent is built, not the workbench


def workbench_key(settings: Settings) -> tuple[Any, ...]:
    """What a workbench is built from: the database, and every setting but the agent's (the embedder, the
    reranker, chunking, the lookup defaults). Changing one (rag.toml edited while the app runs) builds a
    new workbench; the old one stays open until the cache is cleared (Milvus Lite is shared in-process)."""
    return (str(settings.data_dir.resolve()), settings.milvus_uri,
            *((k, repr(settings[k])) for k in sorted(KEYS) if not k.startswith(AGENT_ONLY)))


def agent_key(settings: Settings, env: Mapping[str, str] | None = None) -> tuple[Any, ...]:
    """The agent's cache key: its workbench, every setting (so none the agent depends on can be missing,
    whoever adds one), and a digest of the API keys it may read (never the keys themselves)."""
    env = os.environ if env is None else env
    key_vars = sorted({*DEFAULT_KEY_ENV.values(), *(settings[k] for k in KEYS if k.endswith(".api-key-env"))} - {""})
    digest = hashlib.sha256("\0".join(f"{v}={env.get(v, '')}" for v in key_vars).encode()).hexdigest()[:16]
    values = tuple(sorted((k, repr(v)) for k, v in settings.public().items()))
    return workbench_key(settings), values, digest


@st.cache_resource(show_spinner="Opening the knowledge base…", on_release=_close)
def _workbench(key: tuple[Any, ...]) -> Workbench:
    # The argument is the cache key (workbench_key): one workbench per database and embedder. Everything
    # else is read again from the same environment by load_settings, so they agree.
    return build_workbench(load_settings(data_dir=key[0]))


def get_workbench() -> Workbench:
    """The shared workbench for the current settings. Raises RagError (e.g. StoreLockedError)."""
    return _workbench(workbench_key(get_settings()))


def clear_workbench() -> None:
    """Close and forget every cached workbench (tests; releases Milvus Lite locks)."""
    _workbench.clear()


def workbench_or_stop() -> Workbench:
    """The shared workbench, or the error's message on the page and the script stops here."""
    try:
        return get_workbench()
    except StoreMigrationNeeded as exc:
        st.warning(str(exc), icon="🧱")
        if st.button("Migrate now", type="primary", key="migrate_store"):
            with st.spinner("Rebuilding the collection (vectors are kept)…"):
                build_workbench(get_settings(), migrate=True).close()
            st.rerun()
        st.stop()
        raise  # unreachable: st.stop() raises
    except RagError as exc:
        st.error(str(exc), icon="🛑")
        st.stop()
        raise  # unreachable: st.stop() raises


@dataclass(frozen=True)
class ChatMode:
    kind: str  # "dashscope" | "openai" | "offline"
    label: str  # "DashScope" | "OpenAI-compatible" | "Offline"
    detail: str  # model / endpoint / hint, never a key


def chat_mode(settings: Settings, env: Mapping[str, str] | None = None) -> ChatMode:
    """Which chat model the agent will use (`bootstrap.resolve_chat_provider`: settings plus whether a
    key *exists* in the environment). Shows model and endpoint, never a key."""
    from rag_core.bootstrap import resolve_chat_provider
    from rag_core.config import redact_uri

    provider = resolve_chat_provider(settings, env)
    model = settings["chat.model"]
    base_url = redact_uri(settings["chat.base-url"])
    if provider == "dashscope":
        key_env = settings["chat.api-key-env"] or DEFAULT_KEY_ENV["dashscope"]
        hint = "" if (os.environ if env is None else env).get(key_env, "").strip() else f" — ${key_env} is not set"
        return ChatMode("dashscope", "DashScope", f"{model or 'qwen-plus'}{' at ' + base_url if base_url else ''}{hint}")
    if provider == "openai":
        return ChatMode("openai", "OpenAI-compatible",
                        f"{model or '(chat.model not set)'} at {base_url or 'https://api.openai.com/v1'}")
    return ChatMode("offline", "Offline",
                    "extractive answers from the knowledge base; set DASHSCOPE_API_KEY (or chat.base-url "
                    "and its key) for a chat model")


@st.cache_resource(show_spinner=False)
def _agent(key: tuple[Any, ...]) -> Agent:
    # Cached per agent_key: a changed setting or API key builds a new agent, the key digest (a hash,
    # never the key) making a new key take effect without keeping it anywhere but the client.
    from dataclasses import replace

    from rag_core.bootstrap import build_agent

    # The store and retriever are the shared ones; the chat settings are read now.
    return build_agent(replace(get_workbench(), settings=get_settings()))


def get_agent() -> Agent:
    """The chat agent over the shared workbench. Raises RagError (a locked store, a bad chat setting)."""
    return _agent(agent_key(get_settings()))
