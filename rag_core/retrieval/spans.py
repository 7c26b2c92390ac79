"""The retriever span: one lookup with its documents in OpenInference's attributes
(`retrieval.documents.{i}.document.id/score/content`, the id being the evidence key), plus what the workbench
adds: every evidence key, and each dropped hit's key and reason. The stages (embed, search, fusion, rerank,
postprocess, projection) are its children (retriever.py, ports.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .. import tracing
from ..tracing import semconv as sc

# A LookupResult (retriever.py, which imports this module: named here by its fields only)
LookupResult = Any


def lookup_attributes(result: LookupResult) -> dict[str, object]:
    out: dict[str, object] = {sc.EVIDENCE_KEYS: list(result.evidence_keys),
                              sc.PARAMS: json.dumps(result.params.to_dict(), default=str),
                              f"{sc.HITS}.raw": len(result.traces)}
    for i, c in enumerate(result.evidence):
        out[sc.document(i, sc.DOCUMENT_ID)] = c.evidence_key
        out[sc.document(i, sc.DOCUMENT_SCORE)] = float(c.score)
        out[sc.document(i, sc.DOCUMENT_CONTENT)] = c.content
        out[sc.document(i, sc.DOCUMENT_METADATA)] = json.dumps(
            {"doc_id": c.doc_id, "chunk_index": c.chunk_index, "source": c.source, "rank": c.rank},
            ensure_ascii=False, default=str)
    for i, t in enumerate(result.post.dropped):
        out[sc.dropped(i, "evidence_key")] = t.evidence_key
        out[sc.dropped(i, "reason")] = t.status
    if result.warnings:
        out["rag.warnings"] = list(result.warnings)
    return out


@contextmanager
def traced_lookup(query: str, name: str = "retrieve") -> Iterator[Callable[[LookupResult], LookupResult]]:
    """A retriever span around a lookup made inside the block; call the yielded function with the result to
    record its documents (it returns the result). A new trace when nothing is current (`/v1/search`, the
    debugger), a child of the tool call inside a chat turn."""
    with tracing.span(name, sc.RETRIEVER, {sc.INPUT_VALUE: query}) as span:
        def done(result: LookupResult) -> LookupResult:
            tracing.set_attributes(span, lookup_attributes(result))
            return result

        yield done
