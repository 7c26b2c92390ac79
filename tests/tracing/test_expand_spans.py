"""A lookup with small to big on traces its assembly: the expand, merge and projection spans, in that order after
post-processing, each with the blocks it made (keys and tokens; their text only where tracing.capture-content
allows)."""

from __future__ import annotations

import json

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from rag_core.retrieval import KnowledgeRetriever
from rag_core.retrieval.expand import ExpandParams
from rag_core.tracing import semconv as sc

PARENT = {"expand": ExpandParams("parent"), "max_chunks_per_document": 3}


def _stages(exporter: InMemorySpanExporter) -> list:
    finished = exporter.get_finished_spans()
    (root,) = [s for s in finished if s.parent is None]
    children = [s for s in finished if s.parent is not None and s.parent.span_id == root.context.span_id]
    return sorted(children, key=lambda s: s.start_time or 0)


def test_the_expand_merge_and_projection_spans_carry_the_blocks_in_order(retriever: KnowledgeRetriever,
                                                                         spans: InMemorySpanExporter) -> None:
    result = retriever.lookup("cpu usage high restart", **PARENT)
    stages = _stages(spans)
    names = [s.name for s in stages]
    assert names[-4:] == ["postprocess", "expand", "merge", "projection"]
    expand, merge, projection = (dict(s.attributes or {}) for s in stages[-3:])
    for attributes, stage in ((expand, "expand"), (merge, "merge"), (projection, "projection")):
        assert attributes[sc.STAGE] == stage and attributes[sc.SPAN_KIND] == sc.CHAIN

    assert expand[sc.EXPAND_MODE] == "parent" and expand[sc.BLOCKS] == len(expand[sc.BLOCK_KEYS])
    assert expand[sc.BLOCKS_GROWN] >= 1  # a chunk of a headed runbook grows to its section
    grown = json.loads(str(expand[sc.OUTPUT_VALUE]))
    assert [b["key"] for b in grown] == list(expand[sc.BLOCK_KEYS])
    assert [b["tokens"] for b in grown] == json.loads(str(expand[sc.BLOCK_TOKENS]))
    assert any(b["grew"] == "parent" for b in grown)

    assert list(merge[sc.BLOCK_KEYS]) == [b.key for b in result.blocks]
    assert json.loads(str(merge[sc.BLOCK_TOKENS])) == [b.tokens for b in result.blocks]
    assert merge[sc.BLOCKS_MERGED] == len(expand[sc.BLOCK_KEYS]) - len(result.blocks)
    assert [b["content"] for b in json.loads(str(merge[sc.OUTPUT_VALUE]))] == [b.content for b in result.blocks]

    items = result.projection.items
    assert list(projection[sc.BLOCK_KEYS]) == [p.document_id for p in items]
    assert json.loads(str(projection[sc.BLOCK_TOKENS]))  # a list of numbers: JSON == [p.tokens for p in items]
    assert projection[sc.CONTEXT_TOKENS] == result.projection.tokens == sum(p.tokens for p in items)
    assert projection[sc.TOKENIZER] == result.projection.tokenizer
    given = json.loads(str(projection[sc.OUTPUT_VALUE]))
    assert [(g["key"], g["content"], g["matched"], g["section"]) for g in given] == \
        [(p.document_id, p.content, list(p.matched), p.section) for p in items]


def test_with_capture_content_off_the_blocks_keep_their_keys_and_tokens_only(
        retriever: KnowledgeRetriever, no_content_spans: InMemorySpanExporter) -> None:
    result = retriever.lookup("cpu usage high restart", **PARENT)
    stages = {s.name: dict(s.attributes or {}) for s in _stages(no_content_spans)}
    for name in ("expand", "merge", "projection"):
        assert sc.OUTPUT_VALUE not in stages[name] and stages[name][sc.BLOCK_KEYS], name
    assert list(stages["projection"][sc.BLOCK_KEYS]) == [p.document_id for p in result.projection.items]
