"""An embedder upgrade's side of the store (ports.UpgradableStore on Milvus; kb.upgrade runs the job).

The new embedder's vectors go into a collection of their own, `NAME__emb_<embedder>` (names.upgrade_collection),
made for that embedder (its description names it, as every chunk collection's does), beside the live chunk
collection, which searches keep using. Each row staged there is the live row with the new vector; a row whose
content or metadata changed after it was staged is embedded again, one removed from the live collection is removed
from the staging too, and one whose other fields (labels, version) changed is copied again with its staged vector.
So a job killed at any point resumes with what it staged, and new uploads during the job are staged by its next
pass. The swap itself is the catalog entry naming the new collection (`milvus.chunks`) and embedder in one write.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ...records import search_text
from .filters import one_of
from .rows import with_bm25_text
from .schema import CHUNK_FIELDS, Schema
from .writes import INSERT_BATCH

_EMBEDDED_FROM = ("content", "metadata")  # what a row's vector is made of (records.search_text)
_PAGE = 1000


def rows(client: Any, name: str, fields: Sequence[str]) -> Iterator[dict[str, Any]]:
    """Every row of collection `name` with `fields`, a page at a time."""
    iterator = client.query_iterator(name, batch_size=_PAGE, filter="", output_fields=list(fields))
    try:
        while batch := iterator.next():
            yield from batch
    finally:
        iterator.close()


def stage(schema: Schema, name: str) -> None:
    """Collection `name` ready for `schema`'s embedder, dictionary and stop words: kept when it was made for those (a
    job resumed), else made (again)."""
    client = schema.client
    if client.has_collection(name):
        if schema.meta(name) == json.loads(schema.description()):
            client.load_collection(name)
            return
        client.drop_collection(name)  # made for another embedder (an upgrade that was cancelled and changed)
    schema.create_chunks(name)
    client.load_collection(name)


def unstaged(client: Any, live: str, name: str) -> list[tuple[str, str]]:
    """(row id, text to embed) of every row of `live` that `name` lacks or holds with other content or metadata.
    Rows of `name` no longer in `live`, or embedded from other text, are removed; those whose other fields changed
    are copied again with their staged vector."""
    fields = [f for f in CHUNK_FIELDS if f != "id"]
    terms = dictionary_of(client, name)
    now = {row["id"]: row for row in rows(client, live, ["id", *fields])}
    staged = {row["id"]: row for row in rows(client, name, ["id", *fields])}
    stale = [i for i, row in staged.items() if i not in now or _embedded_from(row) != _embedded_from(now[i])]
    for start in range(0, len(stale), INSERT_BATCH):
        client.delete(name, filter=one_of("id", stale[start:start + INSERT_BATCH]))
    gone = set(stale)
    moved = [i for i, row in staged.items() if i not in gone and any(row.get(f) != now[i].get(f) for f in fields)]
    for start in range(0, len(moved), INSERT_BATCH):
        part = moved[start:start + INSERT_BATCH]
        vectors = {r["id"]: r["vector"] for r in client.query(name, filter=one_of("id", part),
                                                              output_fields=["id", "vector"])}
        client.upsert(name, [with_bm25_text({**now[i], "vector": vectors[i]}, terms) for i in part if i in vectors])
    return [(i, search_text(row["content"], row.get("metadata"))) for i, row in now.items()
            if i not in staged or i in gone]


def _embedded_from(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row.get(f) for f in _EMBEDDED_FROM)


def put(client: Any, live: str, name: str, ids: Sequence[str], vectors: np.ndarray | None) -> int:
    """The live rows `ids` written into `name` with `vectors` (in that order; None: their own), their `bm25_text`
    made with `name`'s dictionary; rows gone meanwhile are skipped (the next `unstaged` pass removes what they
    left). Returns the rows written."""
    fields = CHUNK_FIELDS if vectors is not None else [*CHUNK_FIELDS, "vector"]
    by_id = {row["id"]: row for row in client.query(live, filter=one_of("id", list(ids)), output_fields=fields)}
    given = vectors if vectors is not None else [by_id[i]["vector"] if i in by_id else None for i in ids]
    terms = dictionary_of(client, name)
    batch = [with_bm25_text({**by_id[i], "vector": np.asarray(v, dtype=np.float32).tolist()}, terms)
             for i, v in zip(ids, given, strict=True) if i in by_id]
    for start in range(0, len(batch), INSERT_BATCH):
        client.upsert(name, batch[start:start + INSERT_BATCH])
    return len(batch)


def dictionary_of(client: Any, name: str) -> tuple[str, ...]:
    """The BM25 dictionary chunk collection `name` was made with (its description)."""
    try:
        return tuple(json.loads(client.describe_collection(name).get("description") or "{}").get("dictionary") or ())
    except json.JSONDecodeError:
        return ()


def count(client: Any, name: str) -> int:
    if not client.has_collection(name):
        return 0
    return int(client.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"])
