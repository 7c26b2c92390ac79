"""The only place that builds real adapters from Settings. Nothing here runs at import time.

Secrets come from the environment only, read here when a client is built; they are passed to the
client and never stored in Settings, logged, or written anywhere.

Only entry points (the CLI, the HTTP service, the app's pages, bench, tests) import this module. What they
open here is built with its collaborators passed in: `knowledge_bases(settings, env)` and
`open_knowledge_bases(...)` hand the knowledge-base operations the `factories(env)` they open stores and
workbenches with; evaluation and rebuild take the same `Factories` (or the one function they need).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .access.groups import parse_folder_rules, scope_over
from .access.records import EVERYONE, Principal
from .clients.providers import CHAT_MODELS, OFFLINE
from .config import Settings, originals_dirs
from .embedding.providers import EMBEDDERS
from .errors import ConfigError
from .ingest import Ingestor
from .loaders import load_options
from .ports import Embedder, KnowledgeStore, QueryRewriter
from .records import KnowledgeBase
from .registry import DEFAULT_KEY_ENV, secret
from .rerank.providers import NONE, RERANKERS
from .retrieval import KnowledgeRetriever, StoreSearchPort, params_from_settings
from .store import LiteOptions, MilvusStore
from .workbench import Factories, Workbench

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from .agent import Agent
    from .agent.triage import Triage
    from .evaluation.testsets import TestSetStore
    from .feedback import TurnStore
    from .kb.catalog import MilvusCatalog
    from .kb.manage import KnowledgeBases
    from .kb.pool import OpenKnowledgeBases
    from .ports import (
        AccessStore,
        ChatModel,
        EvalRunStore,
        KnowledgeBaseCatalog,
        LogsClient,
        MetricsClient,
        Reranker,
    )
    from .sources.book import SourceBook

def build_embedder(settings: Settings, env: Mapping[str, str] | None = None) -> Embedder:
    """The embedder `embedding.provider` names, by its factory in `embedding/providers.py`. A key is read there."""
    build: Callable[[Settings, Mapping[str, str] | None], Embedder] = EMBEDDERS.factory(settings["embedding.provider"])
    return build(settings, env)


def lite_options(settings: Settings) -> LiteOptions:
    """How this process reaches a Milvus Lite file: through the store host (shared) or alone."""
    return LiteOptions(settings["milvus.lite-mode"], settings["milvus.host-idle"], settings["milvus.collection"])


def build_store(settings: Settings, embedder: Embedder, env: Mapping[str, str] | None = None, *,
                migrate: bool = False) -> MilvusStore:
    """The knowledge base's store (Milvus Lite in the data dir, or the server in MILVUS_URI), opened,
    keeping originals in the data dir."""
    collection = settings["milvus.collection"]
    return open_store(settings.milvus_uri, collection, embedder, migrate=migrate, token=secret("MILVUS_TOKEN", env),
                      timeout=settings["milvus.timeout"], lite=lite_options(settings),
                      database=kept_database(settings, env), chunks=chunks_of(settings, collection),
                      **originals_dirs(settings, collection))


def kept_database(settings: Settings, env: Mapping[str, str] | None = None) -> Engine | None:
    """The shared-state database that keeps the knowledge bases' chunk edits and labels (store.kept) when
    database.url (RAG_DATABASE_URL) is set; None: they stay files beside the index, as without a database."""
    from .db.url import ENV, database_url

    if not (str(settings["database.url"] or "").strip() or (env or {}).get(ENV, "").strip()):
        return None
    from .store.kept_sql import kept_engine

    return kept_engine(database_url(settings, env))


def connect_store(settings: Settings, collection: str, env: Mapping[str, str] | None = None) -> MilvusStore:
    """A store on `collection` of the configured database, not opened yet (it connects on first use): token,
    deadline, how a Milvus Lite file is reached (through the store host by default) and where its originals are
    kept, all from `settings`. Every store but `open_store`'s is made here, so none reaches the file another way."""
    return MilvusStore(settings.milvus_uri, collection, token=secret("MILVUS_TOKEN", env),
                       timeout=settings["milvus.timeout"], lite=lite_options(settings),
                       database=kept_database(settings, env), chunks=chunks_of(settings, collection),
                       **originals_dirs(settings, collection))


def chunks_of(settings: Settings, collection: str) -> str:
    """Where knowledge base `collection`'s chunks are: `milvus.chunks` when `settings` are its own (kb.settings.apply),
    after an embedder upgrade swapped them (kb.upgrade); "" for its own name."""
    return settings["milvus.chunks"] if collection == settings["milvus.collection"] else ""


def open_source_store(settings: Settings, collection: str, env: Mapping[str, str] | None = None) -> MilvusStore:
    """Another knowledge base of this data dir, opened only to read its documents and kept originals
    (`reindex --from`: it may have been made with another embedder). Close it after use."""
    store = connect_store(settings, collection, env)
    try:
        store.open_to_read()
    except BaseException:
        store.close()
        raise
    return store


def open_store(uri: str, collection: str, embedder: Embedder, *, migrate: bool = False, token: str = "",
               timeout: float = 60.0, lite: LiteOptions | None = None, originals: Path | None = None,
               legacy_originals: Path | None = None, database: Engine | None = None, chunks: str = "") -> MilvusStore:
    """A Milvus store opened for `embedder`; closed again if opening fails (releasing Milvus Lite).
    `lite`: how a Milvus Lite file is reached (shared through the store host, or exclusive); `database`: where its
    chunk edits and labels are kept (`kept_database`); `chunks`: its chunk collection after an upgrade (`chunks_of`)."""
    store = MilvusStore(uri, collection, token=token, timeout=timeout, lite=lite, originals=originals,
                        legacy_originals=legacy_originals, database=database, chunks=chunks)
    try:
        store.open(embedder.name, embedder.dim, migrate=migrate)
    except BaseException:
        store.close()
        raise
    return store


def build_workbench(settings: Settings, env: Mapping[str, str] | None = None,
                    embedder: Embedder | None = None, *, migrate: bool = False,
                    kb: KnowledgeBase | None = None) -> Workbench:
    """The knowledge base `settings` choose (`settings.kb_name`: the default one, made on first use, or one
    the catalog lists), opened with its own settings. `embedder`: one already loaded for it (tests, a page
    that shares the model). `migrate`: rebuild a collection created by an older version instead of refusing.
    `kb`: its catalog entry when the caller holds it already (a copy being filled is not listed yet), or one not
    written yet (committed_ns 0), written here once the knowledge base has opened.

    A default knowledge base made now is written to the catalog only once its embedder is built and its
    collections are open: a first command whose settings cannot work records nothing (`made` says it was
    written here, so a command that fails later can undo it: kb.manage.KnowledgeBases.discard_made)."""
    from .kb.catalog import MilvusCatalog
    from .kb.resolve import resolve
    from .kb.settings import apply

    configure_tracing(settings, env)  # lookups (the CLI's, /v1/search, the debugger's) are traces too
    kb_store = connect_store(settings, check_kb_name(settings.kb_name), env)
    try:  # the store's connection reads the catalog first: the knowledge base's settings decide the rest
        catalog = MilvusCatalog(kb_store.client)
        kb = kb or resolve(catalog, settings, record=False)
        settings = apply(settings, kb)
        kb_store.point_to(chunks_of(settings, kb_store.collection))  # an upgrade's collection, when it swapped one in
        embedder = embedder or _kb_embedder(settings, env, kb)
        reranker = build_reranker(settings, env)
        kb_store.open(embedder.name, embedder.dim, migrate=migrate)
        from .kb.chunk_edits import resume

        resume(kb_store, embedder)  # chunk edits a killed re-index left unapplied
        made = not kb.committed_ns
        if made:
            kb = catalog.write(kb)
    except BaseException:
        kb_store.close()
        raise
    wb = _wire(settings, embedder, kb_store, reranker, kb, build_rewriter(settings, env))
    wb.made = made
    return wb


def _kb_embedder(settings: Settings, env: Mapping[str, str] | None, kb: KnowledgeBase) -> Embedder:
    """The embedder knowledge base `kb` keeps. A recorded one that cannot be built says where its settings come
    from and how to change them (a command's --set does not: the knowledge base's own values win)."""
    try:
        return build_embedder(settings, env)
    except ConfigError as exc:
        if not kb.committed_ns:
            raise
        raise ConfigError(f"{exc} Knowledge base {kb.name!r} keeps embedding.provider = "
                          f"{settings['embedding.provider']!r}; while it holds no documents, `python -m rag_core kb "
                          f"set {kb.name} --embedder ...` changes it.") from None


def _wire(settings: Settings, embedder: Embedder, store: KnowledgeStore, reranker: Reranker | None,
          kb: KnowledgeBase | None, rewriter: QueryRewriter | None = None) -> Workbench:
    ingestor = Ingestor(store, embedder, max_size=settings["chunk.max-size"], overlap=settings["chunk.overlap"],
                        max_bytes=int(settings["loader.max-file-mb"] * 1024 * 1024),
                        max_text_chars=settings["loader.max-text-chars"],
                        batch_size=settings["embedding.batch-size"], load_options=load_options(settings))
    params = params_from_settings(settings)
    port = StoreSearchPort(store, embedder, params.search, parse_folder_rules(settings["access.folders"]))
    retriever = KnowledgeRetriever(port, params, reranker, rewriter)
    return Workbench(settings, embedder, store, ingestor, retriever, kb)


def multi_kb_workbench(workbenches: Sequence[Workbench]) -> Workbench:
    """One workbench searching several knowledge bases at once (the agent over the knowledge bases chosen on
    the chat page): the first one's, with a retriever over all of them (rag_core.retrieval.multi: evidence
    keys carry the knowledge base's name). One knowledge base: its own workbench, keys unchanged."""
    from dataclasses import replace

    from .retrieval.multi import MultiKnowledgeBasePort

    if len(workbenches) == 1:
        return workbenches[0]
    first = workbenches[0]
    port = MultiKnowledgeBasePort({wb.settings.kb_name: wb.retriever.port for wb in workbenches})
    return replace(first, retriever=KnowledgeRetriever(port, first.retriever.defaults, first.retriever.reranker,
                                                       first.retriever.rewriter))


def kb_settings(settings: Settings, env: Mapping[str, str] | None = None) -> Settings:
    """`settings` with the chosen knowledge base's own values applied, read from the catalog (nothing else is
    opened): what `chunk --kb` and `config --kb` show."""
    from .kb.resolve import resolve
    from .kb.settings import apply

    check_kb_name(settings.kb_name)
    catalog = open_catalog(settings, env)
    try:  # a default not made yet is shown with the values it would get, and not made by looking
        return apply(settings, resolve(catalog, settings, record=False))
    finally:
        catalog.close()


def check_kb_name(name: str) -> str:
    from .kb.resolve import check_name

    return check_name(name)


def open_catalog(settings: Settings, env: Mapping[str, str] | None = None) -> MilvusCatalog:
    """The catalog of knowledge bases of the configured database (rag_core.kb.catalog), on a connection of its
    own that `close()` releases."""
    from .kb.catalog import MilvusCatalog

    connection = connect_store(settings, settings["milvus.collection"], env)  # never opened: only its connection
    try:
        return MilvusCatalog(connection.client, on_close=connection.close)
    except BaseException:
        connection.close()
        raise


def open_eval_store(settings: Settings, collection: str, embedder: Embedder) -> MilvusStore:
    """An isolated evaluation index (rag_core.evaluation.indexing): `collection` of the evaluation database,
    opened for `embedder`. An evaluation index is a cache: an old layout is upgraded instead of refused."""
    from .evaluation.indexing import eval_db_path

    return open_store(str(eval_db_path(settings)), collection, embedder, migrate=True)


# ---------------------------------------------------------------------------------------- collaborators
def factories(env: Mapping[str, str] | None = None) -> Factories:
    """This module's constructors with `env` given (None: the process's environment, read when a client is
    built), for the code that opens knowledge bases and stores on its own (rag_core.workbench.Factories)."""

    def workbench(settings: Settings, embedder: Embedder | None = None, *, migrate: bool = False,
                  kb: KnowledgeBase | None = None) -> Workbench:
        return build_workbench(settings, env, embedder, migrate=migrate, kb=kb)

    return Factories(open_catalog=lambda settings: open_catalog(settings, env),
                     connect_store=lambda settings, collection: connect_store(settings, collection, env),
                     open_source_store=lambda settings, collection: open_source_store(settings, collection, env),
                     build_embedder=lambda settings: build_embedder(settings, env),
                     build_reranker=lambda settings: build_reranker(settings, env),
                     build_workbench=workbench, open_eval_store=open_eval_store)


def knowledge_bases(settings: Settings, env: Mapping[str, str] | None = None, *,
                    catalog: KnowledgeBaseCatalog | None = None,
                    load_embedder: Callable[[Settings], Embedder] | None = None,
                    held_open: Collection[str] = ()) -> KnowledgeBases:
    """The knowledge bases of the database `settings` name (rag_core.kb.manage.KnowledgeBases: what `catalog`,
    `load_embedder` and `held_open` mean), opening stores and workbenches with `factories(env)`."""
    from .kb.manage import KnowledgeBases

    return KnowledgeBases(settings, factories(env), catalog=catalog, load_embedder=load_embedder,
                          held_open=held_open)


def open_knowledge_bases(first: Workbench, settings: Settings | None = None, env: Mapping[str, str] | None = None,
                         *, own_first: bool = True) -> OpenKnowledgeBases:
    """Several knowledge bases of one database open at once, `first` among them (rag_core.kb.pool), opening the
    others with `factories(env)`."""
    from .kb.pool import OpenKnowledgeBases

    return OpenKnowledgeBases(first, factories(env), settings, own_first=own_first)


# ---------------------------------------------------------------------------------------- agent
def resolve_chat_provider(settings: Settings, env: Mapping[str, str] | None = None) -> str:
    """"dashscope", "openai" or "offline". `auto`: DashScope when DASHSCOPE_API_KEY is set (chat.base-url then
    only replaces DashScope's endpoint), else an OpenAI-compatible endpoint when chat.base-url and its key
    (chat.api-key-env or OPENAI_API_KEY) are set, else offline. Keyless local servers need chat.provider = openai."""
    provider = settings["chat.provider"]
    if provider != "auto":
        return provider
    if secret(DEFAULT_KEY_ENV["dashscope"], env):
        return "dashscope"
    if settings["chat.base-url"] and secret(settings["chat.api-key-env"] or DEFAULT_KEY_ENV["openai"], env):
        return "openai"
    return "offline"


def build_chat_model(settings: Settings, env: Mapping[str, str] | None = None) -> ChatModel | None:
    """The configured chat model, or None for offline mode, by its factory in `clients/providers.py`. The key is
    read there and handed to the client."""
    provider = resolve_chat_provider(settings, env)
    if provider == OFFLINE:
        return None
    build: Callable[[Settings, Mapping[str, str] | None], ChatModel] = CHAT_MODELS.factory(provider)
    return build(settings, env)


def build_rewriter(settings: Settings, env: Mapping[str, str] | None = None) -> QueryRewriter | None:
    """The chat model's rewrite of follow-up questions (retrieval.rewrite), when a chat model is configured and
    rag.rewrite allows it (None: the offline rewrite only)."""
    if settings["rag.rewrite"] in ("off", "offline"):
        return None
    model = build_chat_model(settings, env)
    if model is None:
        return None
    from .agent.loop import model_name
    from .retrieval.rewrite import ModelRewriter

    return ModelRewriter(model, deadline=settings["rag.rewrite-deadline"], model_name=model_name(model))


def build_eval_model(settings: Settings, role: str, env: Mapping[str, str] | None = None) -> ChatModel | None:
    """The chat model of a test-set task on the chat endpoint: role "generator" (eval.generator-model, else
    chat.model; None when no chat model is configured) or "judge" (eval.judge-model; None when it is empty:
    faithfulness is then absent, never guessed)."""
    name = settings[f"eval.{role}-model"]
    if role == "judge" and not name:
        return None
    if name:
        settings = settings.with_overrides({"chat.model": name}, f"eval.{role}-model")
    model = build_chat_model(settings, env)
    if model is None and name:
        raise ConfigError(f"eval.{role}-model = {name} needs a chat endpoint: set DASHSCOPE_API_KEY, or "
                          "chat.provider = openai with chat.base-url (and its key).")
    return model


def build_agent(workbench: Workbench, env: Mapping[str, str] | None = None, *, record: bool = True,
                principal: Principal = EVERYONE) -> Agent:
    """The chat agent over this workbench's retriever: the knowledge-base and date-time tools, the
    Prometheus alerts tool when prometheus.url is set, the Loki logs tool when logs.loki-url is set, and the
    configured model (None = offline). Its turns are recorded in the turn store (feedback, Failures) unless
    `record` is False: an evaluation's answers are not conversations anybody had. `principal`: whom it serves
    (its knowledge-base tool retrieves what their access groups may); an agent shared by several people is told
    each turn's (`Agent.run(..., access=principal.scope(kb))`)."""
    from .agent import Agent, Toolbox, clock_tool, knowledge_base_tool, logs_tool, prometheus_alerts_tool
    from .agent.clock import zone

    settings = workbench.settings
    filter_keys = tuple(k.strip() for k in settings["rag.filter-keys"].split(",") if k.strip())
    access = scope_over(principal, searched_kbs(workbench))
    tools = [knowledge_base_tool(workbench.retriever, filter_keys=filter_keys, access=access),
             clock_tool(settings["chat.timezone"])]
    metrics = build_metrics_client(settings, env)
    if metrics is not None:
        tools.append(prometheus_alerts_tool(metrics))
    logs = build_logs_client(settings, env)
    if logs is not None:
        tools.append(logs_tool(logs, zone(settings["chat.timezone"])))
    configure_tracing(settings, env)
    return Agent(Toolbox(tools), build_chat_model(settings, env), max_steps=settings["chat.max-steps"],
                 history_pairs=settings["chat.history-pairs"], deadline=settings["chat.deadline"],
                 kbs=searched_kbs(workbench),
                 recorder=build_turn_store(settings).add if record else None, embedder=workbench.embedder)


def searched_kbs(workbench: Workbench) -> tuple[str, ...]:
    """The knowledge bases the workbench's retriever searches (recorded with each turn)."""
    from .retrieval.multi import MultiKnowledgeBasePort

    port = workbench.retriever.port
    return tuple(port.ports) if isinstance(port, MultiKnowledgeBasePort) else (workbench.settings.kb_name,)


def build_access_store(settings: Settings, env: Mapping[str, str] | None = None) -> AccessStore:
    """Users, roles, groups and the audit log: PostgreSQL when database.url (RAG_DATABASE_URL) is set, else the data
    folder's SQLite file (team.db), its schema brought to the newest revision on open. StoreError, one line naming
    the database without its password, when it is of another kind or cannot be reached."""
    from .access.sql import SqlAccessStore
    from .db.engine import engine
    from .db.url import database_url

    return SqlAccessStore(engine(database_url(settings, env)))


def build_source_book(settings: Settings, env: Mapping[str, str] | None = None) -> SourceBook:
    """The knowledge bases' sources (rag_core.sources.book): `sources.json` in the data folder, or a row of the
    shared database's kept_records when database.url is set (then their locks are taken there too)."""
    from .files import FileLock
    from .sources.book import SourceBook
    from .store.kept import FileDocument

    damaged = ("The sources in {path} cannot be read ({exc}); restore the file from a backup or delete it and add "
               "the sources again.")
    path, locks = settings.data_dir / "sources.json", settings.data_dir / "sources"
    engine = kept_database(settings, env)
    if engine is None:
        return SourceBook(FileDocument(path, damaged), FileLock(locks / "sources.lock"), locks)
    from .store.kept_sql import SqlDocument, database_lock

    return SourceBook(SqlDocument(engine, "*", "sources", path, damaged),
                      FileLock(locks / "sources.lock", database_lock(engine, "sources")), locks,
                      beyond=lambda name: database_lock(engine, f"source.{name}"))


def build_test_sets(settings: Settings, env: Mapping[str, str] | None = None) -> TestSetStore:
    """The named test sets: a table of the shared-state database when database.url (RAG_DATABASE_URL) is set, else
    the files under the data folder (`testsets.saved_sets_dir`), as without a database. Close it after use."""
    from .db.url import ENV, database_url
    from .evaluation.testsets import FolderTestSets, saved_sets_dir

    if not (str(settings["database.url"] or "").strip() or (env or {}).get(ENV, "").strip()):
        return FolderTestSets(saved_sets_dir(settings))
    from .db.engine import engine
    from .evaluation.testsets_sql import SqlTestSets

    return SqlTestSets(engine(database_url(settings, env)))


def build_turn_store(settings: Settings) -> TurnStore:
    """The turns store (rag_core.feedback): every chat turn and its rating, in PostgreSQL with the rest of the shared
    state when database.url is set, else in the data folder's turns.db."""
    from .feedback import FILE_NAME, TurnStore

    where = str(settings["database.url"] or "").strip() or settings.data_dir / FILE_NAME
    return TurnStore(where, retention_days=settings["feedback.retention-days"],
                     max_turns=settings["feedback.max-turns"])


def build_eval_runs(settings: Settings, env: Mapping[str, str] | None = None) -> EvalRunStore:
    """The saved evaluation runs (retrieval and answer runs): in the shared database's eval_runs table when
    database.url (RAG_DATABASE_URL) is set, else in folders under the data folder's eval/ (runs/, answers/) as
    always."""
    from .db.url import ENV
    from .evaluation.answers import answers_dir
    from .evaluation.results import runs_dir
    from .evaluation.runstore import FolderRunStore, SqlRunStore

    if str(settings["database.url"] or "").strip() or (env or {}).get(ENV, "").strip():
        from .db.engine import engine
        from .db.url import database_url

        return SqlRunStore(engine(database_url(settings, env)))
    return FolderRunStore(runs_dir(settings), answers_dir(settings))


def configure_tracing(settings: Settings, env: Mapping[str, str] | None = None) -> None:
    """The process's traces as `tracing.*` say (export off unless tracing.otlp-endpoint is set); the same settings
    again change nothing."""
    from . import tracing

    tracing.configure(settings, env)


# ---------------------------------------------------------------------------------------- remote clients
def build_reranker(settings: Settings, env: Mapping[str, str] | None = None) -> Reranker | None:
    """The configured reranker behind its circuit breaker (rerank.circuit), or None when rerank.provider = none; the
    adapter is built by its factory in `rerank/providers.py`, which reads the key."""
    from .rerank.circuit import GuardedReranker

    if settings["rerank.provider"] == NONE:
        return None
    build: Callable[[Settings, Mapping[str, str] | None], Reranker] = RERANKERS.factory(settings["rerank.provider"])
    return GuardedReranker(build(settings, env), failures=settings["rerank.circuit-failures"],
                           cooldown=settings["rerank.circuit-cooldown"])


def build_metrics_client(settings: Settings, env: Mapping[str, str] | None = None) -> MetricsClient | None:
    """The Prometheus client (for the alerts tool, alert triage, ...), or None when prometheus.url is unset."""
    if not settings["prometheus.url"]:
        return None
    from .clients.prometheus import PrometheusClient

    return PrometheusClient(settings["prometheus.url"], timeout=settings["prometheus.timeout"],
                            max_retries=settings["prometheus.max-retries"])


def build_logs_client(settings: Settings, env: Mapping[str, str] | None = None) -> LogsClient | None:
    """The Loki client (for the query_logs tool, alert triage, ...), or None when logs.loki-url is unset.
    The bearer token, if any, is read here from the variable named by logs.token-env."""
    if not settings["logs.loki-url"]:
        return None
    from .clients.loki import LokiClient

    token_env = settings["logs.token-env"]
    return LokiClient(settings["logs.loki-url"], token=secret(token_env, env) if token_env else "",
                      token_env=token_env, tenant=settings["logs.tenant"], timeout=settings["logs.timeout"],
                      max_retries=settings["logs.max-retries"])


def build_triage(workbench: Workbench, model: ChatModel | None, env: Mapping[str, str] | None = None, *,
                 record: bool = True) -> Triage:
    """Alert triage over this workbench (the HTTP service's /api/ai_ops): the metrics client (None when
    prometheus.url is unset: the triage then answers with one clear error), runbooks through the agent's
    knowledge-base tool, the logs client when logs.loki-url is set, and `model` (the agent's; None = offline).
    Each triage is recorded in the turn store (rated like a chat turn) unless `record` is False."""
    from .agent import knowledge_base_tool
    from .agent.triage import Triage

    settings = workbench.settings
    return Triage(build_metrics_client(settings, env), knowledge_base_tool(workbench.retriever), model,
                  build_logs_client(settings, env), kbs=searched_kbs(workbench),
                  recorder=build_turn_store(settings).add if record else None, embedder=workbench.embedder)
