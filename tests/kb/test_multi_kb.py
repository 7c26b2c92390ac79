"""Several knowledge bases searched as one (the agent over the knowledge bases chosen on the chat page): the
search-port contract on the merged port, and an agent turn whose evidence keys carry the knowledge base's
name and whose citations verify."""

from __future__ import annotations

import pytest

from rag_core.agent import DoneEvent
from rag_core.bootstrap import Workbench, build_agent, knowledge_bases, multi_kb_workbench
from rag_core.errors import EmptyKnowledgeBase, RetrievalError
from rag_core.identity import doc_id_of
from rag_core.ingest import Ingestor
from rag_core.records import SearchOptions
from rag_core.retrieval.multi import MultiKnowledgeBasePort
from rag_core.retrieval.ports import StoreSearchPort
from rag_core.service.errors import from_rag_error
from rag_core.store.memory import InMemoryChunkStore
from tests.contracts.search_port import CHUNK_OVERLAP, CHUNK_SIZE, CORPUS
from tests.helpers import SAMPLE_KB
from tests.kb.conftest import settings_for

PARTS = {"ops": {k: v for k, v in CORPUS.items() if k.startswith("ops/")},
         "rest": {k: v for k, v in CORPUS.items() if not k.startswith("ops/")}}


def memory_port(embedder, texts: dict[str, str]) -> StoreSearchPort:
    store = InMemoryChunkStore()
    store.open(embedder.name, embedder.dim)
    if texts:
        Ingestor(store, embedder, max_size=CHUNK_SIZE, overlap=CHUNK_OVERLAP).ingest_uploads(
            [(doc_id, text.encode()) for doc_id, text in texts.items()])
    return StoreSearchPort(store, embedder)


@pytest.fixture(scope="module")
def two_ports(local_embedder) -> MultiKnowledgeBasePort:
    return MultiKnowledgeBasePort({name: memory_port(local_embedder, texts) for name, texts in PARTS.items()})


# The search port's contracts over two knowledge bases: tests/retrieval/test_search_port_contract.py.


def test_a_filter_naming_a_knowledge_base_reaches_only_it(two_ports) -> None:
    hits = two_ports.search("disk tank", 50, {"doc_id": ["ops:ops/disk.md", "lab/zebrafish.md"]}).hits
    assert {doc_id_of(h.metadata) for h in hits} == {"ops:ops/disk.md", "rest:lab/zebrafish.md"}
    assert two_ports.search("disk", 5, {"doc_id": "nope:ops/disk.md"}).hits == ()  # no such kb: a plain doc_id


def test_empty_knowledge_bases_are_told_by_type_and_answer_as_one_empty_knowledge_base(local_embedder,
                                                                                       two_ports) -> None:
    """Every knowledge base empty: an EmptyKnowledgeBase, as for one (HTTP 409 both, service/errors.py); one of
    several empty: the others answer; another failure, whatever its words, is not taken for an empty one."""
    empty = memory_port(local_embedder, {})
    with pytest.raises(EmptyKnowledgeBase) as one:
        empty.search("anything", 5)
    with pytest.raises(EmptyKnowledgeBase) as several:
        MultiKnowledgeBasePort({"a": empty, "b": memory_port(local_embedder, {})}).search("anything", 5)
    assert from_rag_error(several.value).status == from_rag_error(one.value).status == 409
    assert from_rag_error(several.value).code == "empty_knowledge_base"
    hits = MultiKnowledgeBasePort({"empty": empty, **two_ports.ports}).search("disk", 5).hits
    assert hits and {h.metadata["knowledgeBase"] for h in hits} <= set(PARTS)

    class Refusing:
        def configured(self, options: SearchOptions) -> Refusing:
            return self

        def search(self, query, k, filters=None):
            raise RetrievalError("The filter is empty: give key=value.")  # says "empty", is no empty knowledge base

    with pytest.raises(RetrievalError) as refused:
        MultiKnowledgeBasePort({"a": Refusing(), "b": empty}).search("anything", 5)
    assert not isinstance(refused.value, EmptyKnowledgeBase) and from_rag_error(refused.value).status == 400


@pytest.mark.milvus
def test_the_agent_over_two_knowledge_bases_cites_keys_that_name_them(tmp_path, local_embedder) -> None:
    settings = settings_for(tmp_path / "data", **{"chat.provider": "offline"})
    with knowledge_bases(settings, {}, load_embedder=lambda s: local_embedder) as kbs:
        kbs.create("zh_ops")
        opened: list[Workbench] = [kbs.open("biz"), kbs.open("zh_ops")]
        try:
            opened[0].ingestor.ingest_paths([SAMPLE_KB / "runbooks" / "cpu_high.md"])
            opened[1].ingestor.ingest_paths([SAMPLE_KB / "runbooks" / "memory_leak_zh.md"])
            agent = build_agent(multi_kb_workbench(opened), {})
            events = list(agent.run("How do I handle HighCPUUsage, and 内存泄漏怎么排查?"))
        finally:
            for wb in opened:
                wb.close()
    done = next(e for e in events if isinstance(e, DoneEvent))
    assert done.citations and not done.unverified_citations and set(done.citations) <= set(done.evidence_keys)
    assert {c.split(":", 1)[0] for c in done.citations} == {"biz", "zh_ops"}  # evidence from both
    assert all(c.partition(":")[2].partition("#chunk-")[0] in ("cpu_high.md", "memory_leak_zh.md")
               for c in done.citations)
