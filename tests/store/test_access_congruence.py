"""Access groups on both ChunkStores (tests/store/test_congruence.py's method): the same documents, tags and folder
rules on MilvusStore over Milvus Lite and on the in-memory store, and the same restricted lookups on both, compared:
Milvus applies the access filter itself (`array_contains_any` on the rows' labels), the fake the same rule in Python.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rag_core.access.groups import parse_folder_rules
from rag_core.access.records import AccessScope
from rag_core.kb.tags import tag
from rag_core.records import SearchOptions
from rag_core.retrieval import KnowledgeRetriever, LookupParams, StoreSearchPort
from rag_core.store import MilvusStore
from rag_core.store.memory import InMemoryChunkStore
from tests.store.test_congruence import Side, on_both

DOCS = {
    "public/disk.md": "# Disk full\n\nWhen the disk fills, delete old log files under /var/log and rotate them.",
    "public/cpu.md": "# CPU high\n\nA runaway process keeps the processor busy; find it with top.",
    "team/a.md": "# Disk full for team A\n\nTeam A deletes old log files and keeps archives on the backup host.",
    "team/b.md": "# Disk full for team B\n\nTeam B rotates log files and keeps archives in the bucket.",
    "secret/vault.md": "# Secret runbook\n\nWhen the disk of the vault fills, the log files are shipped away first.",
    "secret/deep/keys.md": "# Key rotation\n\nRotate the signing keys every quarter; old keys stay in the vault.",
    "ops/front.md": "---\naccess: ops\n---\n# Disk of the log host\n\nThe log host's disk fills with old log files.",
}
RULES = parse_folder_rules("secret/**=ops; secret/deep/**=keys")
SCOPES = [AccessScope(frozenset()), AccessScope(frozenset({"a"})), AccessScope(frozenset({"b", "keys"})),
          AccessScope(frozenset({"ops"}), reveal=True), AccessScope(frozenset(), reveal=True)]
QUERIES = ("disk full log files", "rotate keys vault", "archives backup bucket", "processor busy")


@pytest.fixture(scope="module")
def sides(tmp_path_factory, milvus, local_embedder) -> list[Side]:
    folder = Path(tmp_path_factory.mktemp("access-congruence"))
    lite = MilvusStore(str(folder / "milvus.db"), "access", originals=folder / "originals" / "access")
    memory = InMemoryChunkStore("access")
    made = [Side("milvus-lite", lite, local_embedder), Side("memory", memory, local_embedder)]
    for side in made:
        side.store.open(local_embedder.name, local_embedder.dim)
        side.ingestor.ingest_uploads([(doc_id, text.encode()) for doc_id, text in DOCS.items()])
        tag(side.store, "team/a.md", ["access=a"])
        tag(side.store, "team/b.md", ["access=b"])
    yield made
    lite.close()


def retriever(side: Side, mode: str = "dense") -> KnowledgeRetriever:
    port = StoreSearchPort(side.store, side.embedder, SearchOptions(mode=mode, fusion="rrf"), RULES)
    return KnowledgeRetriever(port, LookupParams(retrieve_k=8, return_n=4, max_chunks_per_document=2,
                                                 search=SearchOptions(mode=mode)))


def lookup(side: Side, query: str, scope: AccessScope, mode: str = "dense", k: int = 8) -> dict[str, Any]:
    result = retriever(side, mode).lookup(query, access=scope, retrieve_k=k, return_n=min(4, k))
    return {"hits": [(t.evidence_key, t.score) for t in result.traces], "hidden": result.hidden}


def test_restricted_lookups_agree_on_milvus_lite_and_in_memory(sides: list[Side]) -> None:
    for query in QUERIES:
        for scope in SCOPES:
            on_both(sides, lambda side, q=query, s=scope: lookup(side, q, s))


def test_bm25_finds_the_same_visible_chunks_on_both(sides: list[Side]) -> None:
    for scope in SCOPES:
        lite, memory = ({key for key, _ in lookup(side, "log files", scope, "bm25", 20)["hits"]} for side in sides)
        assert lite == memory, scope


def test_milvus_filters_inside_the_store_so_retrieve_k_is_filled_with_visible_chunks(sides: list[Side]) -> None:
    lite = sides[0]
    everything = lookup(lite, "Team A and team B keep archives; the vault", AccessScope(None), k=2)
    hidden = {"team/a.md", "team/b.md", "secret/vault.md", "secret/deep/keys.md", "ops/front.md"}
    assert {key.partition("#")[0] for key, _ in everything["hits"]} <= hidden
    mine = lookup(lite, "Team A and team B keep archives; the vault", AccessScope(frozenset()), k=2)
    assert len(mine["hits"]) == 2 and not {key.partition("#")[0] for key, _ in mine["hits"]} & hidden


def test_the_groups_of_both_rules_and_tags_decide(sides: list[Side]) -> None:
    def docs(scope: AccessScope) -> set[str]:
        return {key.partition("#")[0] for key, _ in lookup(sides[0], "disk log files keys vault archives", scope,
                                                           k=20)["hits"]}

    everything = docs(AccessScope(None))
    assert everything == set(DOCS)
    assert docs(AccessScope(frozenset())) == {"public/disk.md", "public/cpu.md"}
    assert docs(AccessScope(frozenset({"ops"}))) == {"public/disk.md", "public/cpu.md", "secret/vault.md",
                                                      "secret/deep/keys.md", "ops/front.md"}  # front matter too
    assert docs(AccessScope(frozenset({"keys", "a"}))) == {"public/disk.md", "public/cpu.md", "team/a.md",
                                                            "secret/deep/keys.md"}
