"""The offline generator's --avoid-rare (issue 41): questions without the chunk's rarest words (its highest-idf
terms over the knowledge base's chunks), asked with its heading's words when it has one; on the in-memory store
(no model, no Milvus)."""

from __future__ import annotations

import random

import pytest

from rag_core.errors import EvaluationError
from rag_core.evaluation.generate import generate_offline, generate_test_set
from rag_core.evaluation.generate.offline import _idf, _without, rare_terms
from rag_core.evaluation.generate.sampling import SampledChunk, read_chunks
from rag_core.ingest import Ingestor
from rag_core.store.memory import InMemoryChunkStore
from rag_core.words import terms
from tests.fakes.embedder import FakeEmbedder

# Every document shares the common words ("service", "requests", "traffic"...); each has rare words of its own.
RARE = {"gateway.md": ("zorblat", "quenchium"), "billing.md": ("vextrane", "plimsoll"),
        "search.md": ("krandle", "ostrevoid"), "queue.md": ("murrowick", "tessaline")}


def _doc(name: str, a: str, b: str) -> str:
    return (f"# {name.split('.')[0].title()} Service\n\n## Handling Traffic\n\n"
            f"The service routes requests through the {a} layer before traffic reaches the cluster. "
            f"If requests fail twice, the service retries them through the {b} pool. "
            "Each service keeps its requests below the traffic limit.\n\n"
            f"{a.title()} and {b} settle the traffic of every service, and requests wait in the cluster when "
            "the limit is reached.\n")


@pytest.fixture(scope="module")
def store() -> InMemoryChunkStore:
    s = InMemoryChunkStore()
    embedder = FakeEmbedder()
    s.open(embedder.name, embedder.dim)
    reports = Ingestor(s, embedder, max_size=800, overlap=0).ingest_uploads(
        [(name, _doc(name, *words).encode("utf-8")) for name, words in RARE.items()])
    assert all(r.status == "added" for r in reports), [r.error for r in reports]
    return s


def test_rare_terms_are_the_highest_idf_ones_ties_included_heading_words_excepted(store: InMemoryChunkStore) -> None:
    chunks = [c for cs in read_chunks(store).values() for c in cs]
    idf = _idf(chunks)
    for chunk in chunks:
        rare = rare_terms(chunk, idf)
        own = set(RARE[chunk.doc_id])
        assert own <= rare, (chunk.doc_id, rare)  # in one document only: the rarest
        assert not rare & {"service", "requests", "traffic", "cluster", "handling"}  # in every one, or the heading's
        cut = min(idf[t] for t in rare)
        assert all(idf.get(t, 0.0) < cut for t in terms(chunk.content) - rare
                   if t not in terms(" ".join(chunk.heading_path)) and not t.isdigit())
    heading_only = SampledChunk("h.md", 0, "Zorblat routes traffic. Zorblat is fast.", ("Zorblat",))
    assert "zorblat" not in rare_terms(heading_only, idf)  # a person asks with the heading's words


def test_avoid_rare_items_leave_out_their_chunks_rare_terms_and_ask_with_the_heading(store: InMemoryChunkStore) -> None:
    plain = generate_offline(store, size=4, seed=0)
    avoiding = generate_offline(store, size=4, seed=0, avoid_rare=True)
    assert generate_offline(store, size=4, seed=0, avoid_rare=True).items == avoiding.items  # deterministic
    assert len(avoiding.items) == 4 and avoiding.meta()["avoid_rare"] is True and plain.meta()["avoid_rare"] is False
    assert {i.kind for i in avoiding.items} == {"title"}  # every chunk has a heading: its question comes first
    for item in avoiding.items:
        assert not terms(item.query) & set(RARE[item.relevant[0]]), item.query
        assert item.generator == "offline" and item.answer is not None
        text = next(c.content for c in store.get_chunks(item.relevant[0]))
        assert item.answer in text  # still a verbatim sentence of its chunk


def test_a_question_loses_its_rare_words_or_is_refused_when_nothing_is_left() -> None:
    made = ("sentence", "What happens if the zorblat layer drops requests?", "If ...")
    assert _without(made, frozenset({"zorblat"}), "en") == (
        "sentence", "What happens if the layer drops requests?", "If ...")
    assert _without(made, frozenset({"quenchium"}), "en") == made  # none of its words is rare: as it was
    assert _without(("terms", "What is zorblat?", "x"), frozenset({"zorblat"}), "en") is None
    zh = _without(("sentence", "如果网关集群的限流触发，会怎么样？", "x"), frozenset({"网关"}), "zh")
    assert zh is not None and "网关" not in zh[1] and zh[1].endswith("？")


def test_terms_questions_name_other_terms_than_the_rarest() -> None:
    from rag_core.evaluation.generate.offline import _terms_question

    chunk = SampledChunk("a.md", 0, "Zorblat layers route traffic requests. Zorblat pools retry traffic requests.", ())
    idf = {"zorblat": 3.0, "layers": 1.0, "route": 1.0, "traffic": 0.5, "requests": 0.5, "pools": 1.0,
           "retry": 1.0}
    answers = ["Zorblat layers route traffic requests."]
    made = _terms_question(chunk, answers, idf, random.Random(0), skip=frozenset({"zorblat"}))
    assert made is not None and made[1] == "What can you tell me about layers, route and pools?"
    plain = _terms_question(chunk, answers, idf, random.Random(0))
    assert plain is not None and plain[1].count("Zorblat") == 1  # as it was without `skip`


def test_avoid_rare_is_for_the_offline_generator_only(store: InMemoryChunkStore) -> None:
    with pytest.raises(EvaluationError, match=r"^--avoid-rare is for --generator offline: a model writes its own "
                                              r"words\.$"):
        generate_test_set(store, size=2, generator="model", model=object(), avoid_rare=True)  # type: ignore[arg-type]
