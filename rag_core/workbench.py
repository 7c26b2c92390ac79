"""A knowledge base wired together (`Workbench`), and what opens workbenches and stores (`Factories`).

`rag_core.bootstrap` is the only place that builds real adapters. The code that opens knowledge bases on its
own (kb.manage, kb.pool, evaluation, rebuild) is handed a `Factories` that bootstrap made
(`bootstrap.factories(env)`), the way Cosmic Python's bootstrap injects what handlers need: nothing outside
the entry points imports bootstrap, and a test can hand in other factories (a store that fails, an embedder
that counts).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .access.records import AccessScope
    from .config import Settings
    from .ingest import Ingestor
    from .ports import DatabaseCatalog, Embedder, KnowledgeStore, Reranker
    from .records import KnowledgeBase, StoredDocument
    from .retrieval import KnowledgeRetriever


@dataclass
class Workbench:
    """Everything wired together for one knowledge base; what the CLI, the app and the tests use. `settings`
    are the knowledge base's (its own values applied, milvus.collection naming it)."""

    settings: Settings
    embedder: Embedder
    store: KnowledgeStore
    ingestor: Ingestor
    retriever: KnowledgeRetriever
    kb: KnowledgeBase | None = None  # the catalog entry it was opened from
    made: bool = False  # that entry was written by this open (the default knowledge base, made on first use)

    def listed_documents(self, scope: AccessScope) -> list[tuple[StoredDocument, tuple[str, ...] | None]]:
        """The documents a caller in `scope` sees listed (access.groups.visible_documents: those a lookup of theirs
        may retrieve), each with its access groups (its `access` labels and folder rules, sorted) when the caller
        sees every document (an admin of the knowledge base, the one person), else None."""
        from .access.groups import access_labels, document_groups, parse_folder_rules, sees_all, visible_documents

        docs = self.store.list_documents()
        labels = access_labels(self.store.labels.all(), self.store.labels.pending())
        rules = parse_folder_rules(self.settings["access.folders"])
        shown = set(visible_documents(scope, [d.doc_id for d in docs], labels, rules))
        return [(d, tuple(sorted(document_groups(d.doc_id, labels, rules))) if sees_all(scope) else None)
                for d in docs if d.doc_id in shown]

    def shows(self, scope: AccessScope, doc_id: str) -> bool:
        """Whether a caller in `scope` sees document `doc_id` (`listed_documents`): one they may not is answered as
        one that does not exist (its chunks, its metadata)."""
        return any(d.doc_id == doc_id for d, _ in self.listed_documents(scope))

    def documents_json(self, scope: AccessScope) -> list[dict[str, Any]]:
        """`listed_documents` as GET .../documents and the MCP tool list_documents answer it: each document as
        `docs --json` prints it, with `access_groups` for a caller who sees every document."""
        return [{**asdict(d), **({"access_groups": list(groups)} if groups is not None else {})}
                for d, groups in self.listed_documents(scope)]

    def close(self) -> None:
        self.store.close()


class OpenWorkbench(Protocol):
    """`bootstrap.build_workbench` with its environment given: the knowledge base `settings` choose, opened."""

    def __call__(self, settings: Settings, embedder: Embedder | None = None, *, migrate: bool = False,
                 kb: KnowledgeBase | None = None) -> Workbench: ...


@dataclass(frozen=True)
class Factories:
    """The adapters' constructors, each bootstrap's function of that name with the environment (secrets) given,
    typed with the ports (rag_core.ports), so a test can hand in any adapter that passes their contracts:

    - `open_catalog(settings)`: the catalog of knowledge bases, kept in their database, on a connection of its own
      (close it);
    - `connect_store(settings, collection)`: a store on a collection of the database, not opened;
    - `open_source_store(settings, collection)`: another knowledge base's store, opened to read its documents, kept
      originals, labels and chunk edits (close it);
    - `build_embedder(settings)`, `build_reranker(settings)` (None for rerank.provider = none);
    - `build_workbench(settings, embedder=None, *, migrate=False, kb=None)`: a knowledge base, opened;
    - `open_eval_store(settings, collection, embedder)`: an isolated evaluation index, opened."""

    open_catalog: Callable[[Settings], DatabaseCatalog]
    connect_store: Callable[[Settings, str], KnowledgeStore]
    open_source_store: Callable[[Settings, str], KnowledgeStore]
    build_embedder: Callable[[Settings], Embedder]
    build_reranker: Callable[[Settings], Reranker | None]
    build_workbench: OpenWorkbench
    open_eval_store: Callable[[Settings, str, Embedder], KnowledgeStore]
