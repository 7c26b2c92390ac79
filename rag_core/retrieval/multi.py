"""Several knowledge bases searched as one: the agent over the knowledge bases chosen on the chat page.

Each knowledge base's own port finds its top k (with that knowledge base's search settings, unless the
caller configures other options for all of them); the hits are merged by score, higher first, and the best k
kept. Every hit says which knowledge base it came from: its doc_id becomes `<knowledge base>:<doc_id>`, so its
evidence key is `<knowledge base>:<doc_id>#chunk-N`, the per-document cap applies per knowledge base, and a
citation names exactly one chunk of one knowledge base. Each channel's rank is recomputed over the merged
hits, by that channel's score.

Scores are compared as they are: dense scores are cosine similarities (comparable between knowledge bases
with the same embedder), BM25 scores come from each knowledge base's own statistics, and hybrid scores are
each knowledge base's fused scores. A filter value `kb:doc_id` applies to that knowledge base only; a
value without a knowledge base name applies to all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..access.records import AccessScope
from ..errors import EmptyKnowledgeBase, RetrievalError
from ..identity import DOC_ID_KEYS, SOURCE_KEYS, doc_id_of
from ..ports import AccessFilteringPort, DocumentChunksPort, KnowledgeSearchPort
from ..records import SearchHit, SearchOptions, SearchResult, StoredChunk
from .params import ACCESS

SEPARATOR = ":"


def labelled(kb: str, hit: SearchHit) -> SearchHit:
    """`hit` as one of several knowledge bases': identity and source carry `kb`."""
    metadata: dict[str, Any] = dict(hit.metadata)
    doc_id = doc_id_of(metadata)
    source = next((metadata[k] for k in SOURCE_KEYS if metadata.get(k)), doc_id)
    for key in DOC_ID_KEYS:
        metadata.pop(key, None)
    if doc_id is not None:
        metadata["docId"] = f"{kb}{SEPARATOR}{doc_id}"
    if source:
        metadata["_source"] = f"{kb}{SEPARATOR}{source}"
    metadata["knowledgeBase"] = kb
    return SearchHit(id=f"{kb}{SEPARATOR}{hit.id}", score=hit.score, content=hit.content, metadata=metadata,
                     channels=dict(hit.channels), cross_language=hit.cross_language)


class MultiKnowledgeBasePort:
    """A KnowledgeSearchPort over several knowledge bases' ports (name -> port, in the order they are shown)."""

    def __init__(self, ports: Mapping[str, KnowledgeSearchPort], options: SearchOptions | None = None) -> None:
        if not ports:
            raise RetrievalError("Choose at least one knowledge base to search.")
        self.ports = dict(ports)
        self.options = options  # None: each knowledge base searches with its own settings

    def configured(self, options: SearchOptions) -> MultiKnowledgeBasePort:
        if options == self.options:
            return self
        return MultiKnowledgeBasePort({name: port.configured(options) for name, port in self.ports.items()}, options)

    def document_chunks(self, doc_id: str) -> list[StoredChunk]:
        """The chunks of `<kb>:<doc_id>` as its knowledge base's port gives them, labelled like its hits
        (ports.DocumentChunksPort); [] when that port gives none."""
        kb, sep, rest = doc_id.partition(SEPARATOR)
        port = self.ports.get(kb) if sep else None
        if not isinstance(port, DocumentChunksPort):
            return []
        return [replace(c, id=f"{kb}{SEPARATOR}{c.id}", doc_id=doc_id, source=f"{kb}{SEPARATOR}{c.source}",
                        metadata={**c.metadata, "docId": doc_id, "_source": f"{kb}{SEPARATOR}{c.source}",
                                  "knowledgeBase": kb})
                for c in port.document_chunks(rest)]

    def _filters(self, name: str, filters: Mapping[str, Any] | None) -> Mapping[str, Any] | None | bool:
        """This knowledge base's share of `filters`; False when they exclude it entirely."""
        if not filters:
            return filters
        mine: dict[str, Any] = {}
        for field, value in filters.items():
            if field == ACCESS:  # the caller's AccessScope: every knowledge base filters by it
                mine[field] = value
                continue
            values = [value] if isinstance(value, str) else list(value)
            kept = []
            for v in values:
                kb, sep, rest = v.partition(SEPARATOR)
                if sep and kb in self.ports:
                    if kb == name:
                        kept.append(rest)
                else:
                    kept.append(v)
            if not kept:
                return False
            mine[field] = kept
        return mine

    def hides(self, scope: AccessScope, doc_id: str) -> bool:
        """Whether `<kb>:<doc_id>` is hidden from `scope` in its knowledge base (ports.AccessFilteringPort); a
        knowledge base whose port cannot tell hides every document of a restricted scope."""
        kb, sep, rest = doc_id.partition(SEPARATOR)
        port = self.ports.get(kb) if sep else None
        if scope.unrestricted:
            return False
        return not isinstance(port, AccessFilteringPort) or port.hides(scope, rest)

    def search(self, query: str, k: int, filters: Mapping[str, Any] | None = None) -> SearchResult:
        """Each knowledge base's search, merged; the caller's AccessScope (filters' `access`) goes to every one, and
        what each hid is summed (`SearchResult.hidden`)."""
        hits: list[tuple[float, int, int, SearchHit]] = []
        timings: dict[str, float] = {}
        empty, hidden = 0, None
        for order, (name, port) in enumerate(self.ports.items()):
            mine = self._filters(name, filters)
            if mine is False:
                continue
            if isinstance(mine, Mapping) and ACCESS in mine and not isinstance(port, AccessFilteringPort):
                raise RetrievalError(f"Knowledge base {name!r} cannot filter documents by access groups, so it is not "
                                     "searched for a user with a restricted scope.")
            try:
                found = port.search(query, k, mine if isinstance(mine, Mapping) else None)
            except EmptyKnowledgeBase:  # the others may hold documents
                empty += 1
                continue
            for stage, ms in found.timings.items():
                timings[stage] = timings.get(stage, 0.0) + ms
            if found.hidden is not None:
                hidden = (hidden or 0) + found.hidden
            hits += [(-hit.score, order, rank, labelled(name, hit)) for rank, hit in enumerate(found.hits)]
        if empty == len(self.ports):
            raise EmptyKnowledgeBase(f"The knowledge bases {', '.join(self.ports)} are empty: ingest documents first.")
        merged = [hit for *_, hit in sorted(hits, key=lambda h: h[:3])][:k]
        return SearchResult(tuple(_reranked_channels(merged)), timings, hidden)


def _reranked_channels(hits: list[SearchHit]) -> list[SearchHit]:
    """Each channel's rank over the merged hits, by that channel's score (ties keep the merged order)."""
    ranks: dict[str, dict[int, int]] = {}
    for channel in {ch for h in hits for ch in h.channels}:
        found = sorted((i for i, h in enumerate(hits) if channel in h.channels),
                       key=lambda i: (-hits[i].channels[channel][1], i))
        ranks[channel] = {i: r for r, i in enumerate(found, start=1)}
    return [SearchHit(h.id, h.score, h.content, h.metadata,
                      {ch: (ranks[ch][i], score) for ch, (_, score) in h.channels.items()}, h.cross_language)
            for i, h in enumerate(hits)]
