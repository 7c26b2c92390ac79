"""The cached workbenches shared by every page and session, the selected knowledge base, and the
session-level settings.

The sidebar's switcher (`kb_switcher`, drawn by app.py on every page) selects a knowledge base; it is in the
URL (`?kb=small`), so links carry it. `get_workbench()` builds the selected knowledge base's store, ingestor and
retriever once per data dir, Milvus target, knowledge base and settings (`st.cache_resource`); knowledge bases
with the same embedder share one loaded model. Clearing the cache closes the stores, which releases the Milvus
Lite lock. Pages call `workbench_or_stop()`, which turns a `RagError` (a locked database, a bad setting, a
deleted knowledge base) into its message on the page instead of a traceback.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import streamlit as st

from rag_core.access.records import Role
from rag_core.bootstrap import DEFAULT_KEY_ENV, Workbench, build_embedder, build_test_sets, build_workbench
from rag_core.bootstrap import knowledge_bases as bootstrap_knowledge_bases
from rag_core.config import KEYS, Settings, load_settings
from rag_core.errors import Forbidden, RagError, StoreMigrationNeeded
from rag_core.evaluation.testsets import TestSetStore
from rag_core.kb.manage import KnowledgeBases
from rag_core.ports import Embedder

from .access import allowed, readable
from .errors import show_error
from .i18n import t

if TYPE_CHECKING:
    from rag_core.agent import Agent
    from rag_core.feedback import TurnStore

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_KB_DIR = REPO_ROOT / "examples" / "kb"


def get_settings() -> Settings:
    """Settings from rag.toml and the environment (RAG_DATA_DIR isolates a run); cheap, not cached."""
    return load_settings()


def _close(workbench: Workbench) -> None:
    workbench.close()


AGENT_ONLY = ("chat.", "prometheus.", "logs.")  # settings read when the agent is built, not the workbench
KB_PARAM = "kb"  # the selected knowledge base: session state, bound to the URL (`?kb=small`) by the switcher
SWITCH_TO = "kb.switch_to"  # a page's request to select another knowledge base on the next run


def workbench_key(settings: Settings) -> tuple[Any, ...]:
    """What a workbench is built from: the database, the knowledge base, and every setting but the agent's (the
    embedder, the reranker, chunking, the lookup defaults; for a knowledge base, its own values). Changing one
    (rag.toml edited, the knowledge base's settings changed) builds a new workbench; the old one stays open until
    the cache is cleared (Milvus Lite is shared in-process)."""
    return (str(settings.data_dir.resolve()), settings.milvus_uri, settings.kb_name,
            *((k, repr(settings[k])) for k in sorted(KEYS) if not k.startswith(AGENT_ONLY)))


def agent_key(settings: Settings, env: Mapping[str, str] | None = None) -> tuple[Any, ...]:
    """The agent's cache key: its workbench, every setting (so none the agent depends on can be missing,
    whoever adds one), and a digest of the API keys it may read (never the keys themselves)."""
    env = os.environ if env is None else env
    key_vars = sorted({*DEFAULT_KEY_ENV.values(), *(settings[k] for k in KEYS if k.endswith("-env"))} - {""})
    digest = hashlib.sha256("\0".join(f"{v}={env.get(v, '')}" for v in key_vars).encode()).hexdigest()[:16]
    values = tuple(sorted((k, repr(v)) for k, v in settings.public().items()))
    return workbench_key(settings), values, digest


# ---------------------------------------------------------------------------------------- knowledge bases
def _close_manager(manager: KnowledgeBases) -> None:
    manager.close()


# The spinners are drawn around the cached calls (in the session's language; the decorator's text is fixed at import).
# st.spinner shows after half a second, so a cache hit draws nothing.
@st.cache_resource(show_spinner=False)
def _embedder(key: tuple[Any, ...], _settings: Settings) -> Embedder:
    # One model per embedder in the process, shared by every knowledge base that uses it (`_settings` is not
    # part of the cache key: `key` holds what decides the model).
    return build_embedder(_settings)


def shared_embedder(settings: Settings) -> Embedder:
    from rag_core.kb.pool import embedder_key

    with st.spinner(t("Loading the embedding model…")):
        return _embedder(embedder_key(settings), settings)


@st.cache_resource(show_spinner=False, on_release=_close_manager)
def _manager(key: tuple[Any, ...]) -> KnowledgeBases:
    return bootstrap_knowledge_bases(load_settings(data_dir=key[0]), load_embedder=shared_embedder)


def knowledge_bases() -> KnowledgeBases:
    """The knowledge bases of the configured database (list, create, copy, delete: rag_core.kb.manage), shared
    by every page and session. Its catalog is read on every call, so knowledge bases made by another process
    (the CLI, the HTTP API) show up at once."""
    return _manager(workbench_key(get_settings()))


def selected_kb() -> str:
    """The knowledge base chosen in the sidebar (or by `?kb=` in the URL); the default one when none is. One this
    person may not read is not selected (get_workbench refuses it, without saying whether it exists)."""
    if target := st.session_state.pop(SWITCH_TO, None):  # a page run without app.py's switcher (AppTest)
        st.session_state[KB_PARAM] = target
    return st.session_state.get(KB_PARAM) or st.query_params.get(KB_PARAM) or default_kb()


def readable_kbs() -> list[str]:
    """The knowledge bases this session's person may read (all of them in the one-person setup): every list of
    knowledge bases the pages offer comes from here, so one they may not read is never named."""
    return readable(knowledge_bases().names())


def default_kb() -> str:
    """`milvus.collection` when this person may read it, else the first knowledge base they may read."""
    default = get_settings()["milvus.collection"]
    if allowed(default, Role.READER):
        return default
    try:
        names = readable_kbs()
    except RagError:
        names = []
    return names[0] if names else default


def kb_settings(name: str | None = None) -> Settings:
    """The settings of knowledge base `name` (default: the selected one), its own values applied. Raises
    KnowledgeBaseError when it does not exist (any more)."""
    from rag_core.kb.settings import apply

    name = name or selected_kb()
    return apply(get_settings().for_kb(name), knowledge_bases().get(name))


def kb_switcher() -> str:
    """The sidebar's knowledge-base selector (every page: app.py draws it); returns the selected name. It lists
    the knowledge bases this person may read (ui/access.py); a name that no longer exists (deleted by another session
    or process, a stale link) or that they may not read falls back to the default, with the same words."""
    try:
        names = readable_kbs()
    except RagError as exc:
        show_error(exc)
        return get_settings()["milvus.collection"]
    if not names:
        st.info(t("You may not read any knowledge base yet: ask an admin for a role."), icon="🔒")
        return get_settings()["milvus.collection"]
    default = default_kb()
    if target := st.session_state.pop(SWITCH_TO, None):  # asked for by a page on the previous run
        st.session_state[KB_PARAM] = target
    chosen = st.session_state.get(KB_PARAM) or st.query_params.get(KB_PARAM)
    if chosen and chosen not in names:
        st.warning(t("Knowledge base `{chosen}` does not exist (any more); showing `{default}`.", chosen=chosen,
                     default=default), icon="⚠️")
        st.session_state[KB_PARAM] = default
    name = st.selectbox(t("Knowledge base"), names, index=names.index(default) if default in names else 0,
                        key=KB_PARAM, bind="query-params",
                        help=t("Every page works on this knowledge base; create, copy or delete them on the "
                               "Knowledge base page."))
    return name or default


def switch_kb(name: str) -> None:
    """Select knowledge base `name` from the next run on (the switcher is drawn before the page, so a page asks
    for the change and reruns: `switch_kb(name); st.rerun()`)."""
    st.session_state[SWITCH_TO] = name


@st.cache_resource(show_spinner=False, on_release=_close)
def _workbench(key: tuple[Any, ...]) -> Workbench:
    # The argument is the cache key (workbench_key): one workbench per database, knowledge base and settings.
    # The knowledge base is opened from the catalog with the shared model of its embedder.
    return knowledge_bases().open(key[2])


def get_workbench(name: str | None = None) -> Workbench:
    """The shared workbench of knowledge base `name` (default: the selected one). Raises RagError (e.g.
    StoreLockedError, KnowledgeBaseError for one that does not exist, Forbidden for one this person may not
    read: checked before it is looked up, so the refusal does not tell whether it exists)."""
    name = name or selected_kb()
    if not allowed(name, Role.READER):
        raise Forbidden(f"Reading knowledge base {name!r} needs the reader role on it: ask an admin.")
    key = workbench_key(kb_settings(name))
    with st.spinner(t("Opening the knowledge base…")):
        return _workbench(key)


def clear_workbench() -> None:
    """Close and forget every cached workbench, the agents over them and the catalog connection (tests; releases
    Milvus Lite locks)."""
    _agent.clear()  # an agent keeps its workbenches: one left cached would search a closed store
    _workbench.clear()
    _manager.clear()


def workbench_or_stop() -> Workbench:
    """The shared workbench, or the error's message on the page and the script stops here."""
    try:
        return get_workbench()
    except StoreMigrationNeeded as exc:
        show_error(exc, icon="🧱", warning=True)
        if st.button(t("Migrate now"), type="primary", key="migrate_store"):
            with st.spinner(t("Rebuilding the collection (vectors are kept)…")):
                build_workbench(get_settings().for_kb(selected_kb()), migrate=True).close()
            st.rerun()
        st.stop()
        raise  # unreachable: st.stop() raises
    except RagError as exc:
        show_error(exc)
        st.stop()
        raise  # unreachable: st.stop() raises


@st.cache_resource(show_spinner=False)
def _turn_store(data_dir: str, retention_days: int, max_turns: int, database_url: str = "") -> TurnStore:
    from rag_core.feedback import FILE_NAME, TurnStore

    return TurnStore(database_url or Path(data_dir) / FILE_NAME, retention_days=retention_days, max_turns=max_turns)


def get_turn_store() -> TurnStore:
    """The recorded chat turns and their ratings of this data folder, or of database.url's database
    (rag_core.feedback), shared by the chat and Failures pages; the app, the API and the CLI write the same ones."""
    settings = get_settings()
    return _turn_store(str(settings.data_dir.resolve()), settings["feedback.retention-days"],
                       settings["feedback.max-turns"], str(settings["database.url"] or "").strip())


def _close_sets(sets: TestSetStore) -> None:
    sets.close()


@st.cache_resource(show_spinner=False, on_release=_close_sets)
def _test_sets(data_dir: str, database_url: str, _settings: Settings) -> TestSetStore:
    # Keyed by the data folder and database.url (`_settings`, not hashed, says the rest).
    return build_test_sets(_settings)


def get_test_sets() -> TestSetStore:
    """The saved test sets (`bootstrap.build_test_sets`): the data folder's files, or a table of database.url's
    database; shared by the Evaluation and Failures pages, the same sets the CLI and the API see."""
    settings = get_settings()
    return _test_sets(str(settings.data_dir.resolve()), str(settings["database.url"] or "").strip(), settings)


@dataclass(frozen=True)
class ChatMode:
    kind: str  # "dashscope" | "openai" | "offline"
    label: str  # "DashScope" | "OpenAI-compatible" | "Offline", in the session's language
    detail: str  # model / endpoint / hint, never a key (in the session's language)


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
        hint = ("" if (os.environ if env is None else env).get(key_env, "").strip()
                else t(" — ${key_env} is not set", key_env=key_env))
        model = model or "qwen-plus"
        return ChatMode("dashscope", "DashScope",  # i18n: ok (a product name)
                        (t("{model} at {url}", model=model, url=base_url) if base_url else model) + hint)
    if provider == "openai":
        return ChatMode("openai", t("OpenAI-compatible"),
                        t("{model} at {url}", model=model or t("(chat.model not set)"),
                          url=base_url or "https://api.openai.com/v1"))
    return ChatMode("offline", t("Offline"),
                    t("extractive answers from the knowledge base; set DASHSCOPE_API_KEY (or chat.base-url "
                      "and its key) for a chat model"))


@st.cache_resource(show_spinner=False)
def _agent(key: tuple[Any, ...], _names: tuple[str, ...]) -> Agent:
    # Cached per agent_key of every knowledge base it searches: a changed setting or API key builds a new agent,
    # the key digest (a hash, never the key) making a new key take effect without keeping it anywhere but the
    # client. `_names` (not hashed) are the knowledge bases, whose settings are in `key`.
    from dataclasses import replace

    from rag_core.bootstrap import build_agent, multi_kb_workbench

    # The stores and retrievers are the shared ones; the chat settings are read now.
    workbench = multi_kb_workbench([get_workbench(name) for name in _names])
    return build_agent(replace(workbench, settings=kb_settings(_names[0])))


def get_agent(names: Sequence[str] | None = None) -> Agent:
    """The chat agent over the shared workbenches of knowledge bases `names` (default: the selected one); with
    several, its evidence keys carry the knowledge base's name. Raises RagError (a locked store, a bad chat
    setting, a knowledge base that does not exist)."""
    names = tuple(dict.fromkeys(names or [selected_kb()]))
    key = (agent_key(kb_settings(names[0])), *(workbench_key(kb_settings(n)) for n in names[1:]))
    return _agent(key, names)
