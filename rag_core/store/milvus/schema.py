"""The chunk collection's and the registry's layout, checked when a store opens, and schema migration.

The collection's description records the app, the layout version, the embedder and the analyzer, so
a collection made by another program, another embedder or an older layout is recognised on open.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import StoreError, StoreMigrationNeeded
from ...names import MIGRATING, name_problem, same_as  # the one name rule; MIGRATING: the migration copy's suffix
from ...scope import MAX_LABELS, MAX_VALUE_CHARS
from ...text import fold
from .rows import with_bm25_text

log = logging.getLogger(__name__)


# Of the chunk collection; bump when a field or the analyzer changes (then `migrate` rebuilds it).
# 1: jieba + lowercase + stemmer + stop. 2: punctuation tokens dropped (cnalphanumonly). 3: `labels`, the
# document's metadata as `key=value` strings that filters match (scope.document_labels). 4: `bm25_text`,
# the content folded to Simplified Chinese (text.fold, OpenCC t2s), is what BM25 analyses, so Traditional and
# Simplified text share their words (bench/results/folding.json).
SCHEMA_VERSION = 4
# jieba segments Chinese; cnalphanumonly drops the punctuation and whitespace tokens jieba emits (they
# skewed BM25 length normalisation: COVID-QA nDCG@10 0.757 -> 0.821, CMRC 2018 0.957 -> 0.977);
# lowercase + English stemming + stop words make English terms match as they do in bm25s.
ANALYZER: dict[str, Any] = {
    "tokenizer": "jieba",
    "filter": ["cnalphanumonly", "lowercase", {"type": "stemmer", "language": "english"},
               {"type": "stop", "stop_words": ["_english_"]}],
}


def analyzer(stop_words: Sequence[str] = ()) -> dict[str, Any]:
    """ANALYZER with a knowledge base's own stop words (retrieval.dictionary): dropped as written, lower-cased, before
    the stemmer changes them."""
    if not stop_words:
        return ANALYZER
    own = {"type": "stop", "stop_words": [fold(w).lower() for w in stop_words]}
    return {**ANALYZER, "filter": [*ANALYZER["filter"][:2], own, *ANALYZER["filter"][2:]]}
CHUNK_FIELDS = ["id", "content", "doc_id", "chunk_index", "source", "title", "version", "metadata", "labels"]
# A label is a key (at most 64 ASCII characters), `=` and a value (at most MAX_VALUE_CHARS characters of up to 4
# bytes: Milvus counts VARCHAR lengths in bytes).
LABEL_MAX_BYTES = 64 + 1 + 4 * MAX_VALUE_CHARS
REGISTRY_FIELDS = [
    "key", "doc_id", "version", "state", "committed_ns", "file_name", "extension", "size_bytes", "chunks",
    "content_hash", "fingerprint", "ingested_at",
]
QUERY_LIMIT = 16384  # Milvus's cap on one query/search window

# The dense index, chosen by size. Milvus Lite offers FLAT (exact) and IVF_FLAT (approximate): FLAT scans every
# vector, about 0.3 ms per thousand 512-d rows on one core (31 ms at 100k), so from IVF_FROM rows on a Lite file
# gets IVF_FLAT, whose search scans the clusters nearest the query. Milvus Lite 2.5.1 ignores the search's `nprobe`
# (bench/scale.py: the same recall at nprobe 8 to 64; on random vectors 0.18 even at nprobe = nlist), so on Lite the
# recall is what `nlist` gives: against FLAT, 0.67 from 250k to 1M chunks of the benchmark (bench/results/scale.json,
# with the latencies). Building it for 1M chunks took 456 s there, and the run's memory peaked (12.8 GB) while it did.
# A server picks its own index (AUTOINDEX) and honours `nprobe`.
IVF_FROM = 200_000
NPROBE = 32
# What a dense search asks of its index: IVF_FLAT reads `nprobe` (a server's; Lite 2.5.1 ignores it), FLAT and
# AUTOINDEX ignore it.
DENSE_SEARCH_PARAMS: dict[str, Any] = {"params": {"nprobe": NPROBE}}


@dataclass(frozen=True)
class DenseIndex:
    """The dense index a collection of `rows` chunks should have (`choose_index`)."""

    index_type: str  # FLAT, IVF_FLAT or AUTOINDEX
    params: dict[str, Any]

    def add_to(self, index: Any) -> None:
        index.add_index("vector", index_type=self.index_type, metric_type="COSINE", params=self.params)


def choose_index(on_lite: bool, rows: int, ivf_from: int = IVF_FROM) -> DenseIndex:
    """The rule: a server's own (AUTOINDEX); on Lite FLAT below `ivf_from` rows, IVF_FLAT from there with about
    sqrt(rows) clusters (at most 1024: building more costs minutes of k-means on a small machine and searching them
    gains little at NPROBE 32)."""
    if not on_lite:
        return DenseIndex("AUTOINDEX", {})
    if rows < ivf_from:
        return DenseIndex("FLAT", {})
    return DenseIndex("IVF_FLAT", {"nlist": max(64, min(1024, round(rows ** 0.5)))})


def check_collection_name(name: str) -> str:
    """A knowledge base's collection name, checked by the one rule (rag_core.names) before Milvus sees it."""
    problem = name_problem(name)
    if problem:
        raise StoreError(problem)
    return name


@dataclass(frozen=True)
class Schema:
    """Creating, checking and migrating the two collections of a store, for one embedder (a part of MilvusStore)."""

    client: Any
    collection: str  # the chunks
    registry: str  # the document registry, `<collection>_docs`
    embedder: str
    dim: int
    on_lite: bool  # Milvus Lite (a FLAT index) or a server (AUTOINDEX)
    # doc_id -> the labels of its rows, for rows copied from a layout without them (read when a migration needs it)
    labels: Callable[[], Mapping[str, Sequence[str]]] | None = None
    dictionary: tuple[str, ...] = ()  # the knowledge base's BM25 dictionary and stop words (retrieval.dictionary)
    stop_words: tuple[str, ...] = ()

    def description(self, layout: int = 0) -> str:
        own = {"dictionary": list(self.dictionary)} if self.dictionary else {}
        return json.dumps({"app": "rag-workbench", "schema": layout or SCHEMA_VERSION, "embedder": self.embedder,
                           "dim": self.dim, "analyzer": analyzer(self.stop_words), **own,
                           **({"stop_words": list(self.stop_words)} if self.stop_words else {})}, ensure_ascii=False)

    def meta(self, name: str) -> dict[str, Any]:
        try:
            return json.loads(self.client.describe_collection(name).get("description") or "{}")
        except json.JSONDecodeError:
            return {}

    def check(self, migrate: bool) -> None:
        """The existing chunk collection is ours, for this embedder, in the current layout (`migrate`: rebuilt
        now when it is an older one)."""
        meta = self.meta(self.collection)
        if meta.get("app") != "rag-workbench":
            raise StoreError(f"Collection {self.collection!r} exists but was not created by this workbench; "
                             "choose another milvus.collection.")
        if (meta.get("embedder"), meta.get("dim")) != (self.embedder, self.dim):
            raise StoreError(
                f"Collection {self.collection!r} was indexed with {meta.get('embedder')} ({meta.get('dim')}-d), but "
                f"the configured embedder is {self.embedder} ({self.dim}-d); vectors from different models "
                "cannot be compared. Either set embedding.provider back, or re-embed everything into a new "
                f"collection: `python -m rag_core --set milvus.collection=NEW reindex --from {self.collection}`."
            )
        if meta.get("schema") != SCHEMA_VERSION:
            if not migrate:
                raise StoreMigrationNeeded(
                    f"Collection {self.collection!r} was created by an older version of the workbench (layout "
                    f"{meta.get('schema')}; this version uses {SCHEMA_VERSION}, with document metadata in the chunk "
                    "rows for filters and Traditional Chinese folded to Simplified for BM25). "
                    "Run `python -m rag_core migrate` once (or press Migrate on the Home page): it rebuilds the "
                    "collection and keeps every vector, nothing is embedded again."
                )
            self.migrate()

    # ---------------------------------------------------------------- schema migration
    def migrate(self) -> int:
        """Rebuild the chunk collection with the current layout, copying every row (vectors included;
        the BM25 vectors are recomputed by Milvus). Returns the number of rows, 0 when nothing to do.

        The rows are first copied to `<collection>__migrating`; only when that copy is complete is the
        old collection dropped and recreated from it, so a failure at any point loses nothing and the
        next `open` finishes the job."""
        client = self.client
        if self.meta(self.collection).get("schema") == SCHEMA_VERSION:
            return 0
        other = same_as(self.collection, client.list_collections())
        if other is not None:  # made before names were compared without case: both live in one Milvus Lite table
            raise StoreError(
                f"Collection {self.collection!r} cannot be migrated while {other!r} exists: Milvus Lite keeps "
                "collections whose names differ only in letter case in one table, so rebuilding one would drop "
                f"the other's rows. Keep one of them: `python -m rag_core kb delete {other}` (or copy it first "
                "to a name that differs by more than letter case), then migrate.")
        temporary = self.collection + MIGRATING
        if client.has_collection(temporary):  # an earlier attempt that never reached the swap
            client.drop_collection(temporary)
        self.create_chunks(temporary)
        client.load_collection(self.collection)
        self.copy_rows(self.collection, temporary)
        client.drop_collection(self.collection)  # from here on the temporary copy is the only full one
        return self.finish_migration()

    def finish_migration(self) -> int:
        """After an interrupted migration (`<collection>__migrating` exists): go back or finish, losing nothing."""
        client = self.client
        temporary = self.collection + MIGRATING
        if client.has_collection(self.collection):
            if self.meta(self.collection).get("schema") != SCHEMA_VERSION:
                client.drop_collection(temporary)  # the old collection is intact: the copy was not finished
                return 0
            client.drop_collection(self.collection)  # a copy back that was interrupted: start it again
        self.create_chunks(self.collection)
        client.load_collection(temporary)
        rows = self.copy_rows(temporary, self.collection)
        client.drop_collection(temporary)
        log.info("migrated %d rows of %s to layout %d", rows, self.collection, SCHEMA_VERSION)
        return rows

    def copy_rows(self, source: str, target: str) -> int:
        """Every row of `source` inserted into `target`, its `labels` re-derived from `self.labels` (the labels file
        and the registry, their source of truth), so a layout without them (before 3) gets them, and a change of the
        labels a document has reaches every row; a row of no listed document keeps its own. Its `bm25_text` is made
        from its content again (rows.with_bm25_text), so a layout without it (before 4) gets it."""
        client = self.client
        has = {f["name"] for f in client.describe_collection(source).get("fields", [])}
        fields = [f for f in CHUNK_FIELDS if f != "id" and f in has] + ["vector"]
        labels = self.labels() if self.labels is not None else {}
        iterator = client.query_iterator(source, batch_size=1000, filter="", output_fields=fields)
        copied = 0
        try:
            while batch := iterator.next():
                client.insert(target, [with_bm25_text({
                    **{name: row[name] for name in ["id", *fields]},
                    "labels": list(labels.get(row["doc_id"], row.get("labels") or ()))}, self.dictionary)
                    for row in batch])
                copied += len(batch)
        finally:
            iterator.close()
        expected = client.query(source, filter="", output_fields=["count(*)"])[0]["count(*)"]
        if copied != expected:
            raise StoreError(f"Migration copied {copied} of {expected} rows from {source}; run it again.")
        return copied

    def create_chunks(self, name: str, layout: int = 0) -> None:
        """The chunk collection `name` in the current layout (`layout` 1, 2 or 3: an older one, for migration
        tests)."""
        from pymilvus import DataType, Function, FunctionType

        client = self.client
        folded = not 0 < layout < 4  # BM25 reads `bm25_text` (layout 4), not `content`
        analysed = {"enable_analyzer": True, "analyzer_params": analyzer(self.stop_words)}
        bm25_input = "bm25_text" if folded else "content"
        schema = client.create_schema(auto_id=False, enable_dynamic_field=False, description=self.description(layout))
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=self.dim)
        schema.add_field("content", DataType.VARCHAR, max_length=65535, **({} if folded else analysed))
        if folded:
            schema.add_field("bm25_text", DataType.VARCHAR, max_length=65535, **analysed)
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_field("doc_id", DataType.VARCHAR, max_length=1024)
        schema.add_field("chunk_index", DataType.INT64)
        schema.add_field("source", DataType.VARCHAR, max_length=1024)
        schema.add_field("title", DataType.VARCHAR, max_length=1024)
        schema.add_field("version", DataType.VARCHAR, max_length=64)
        schema.add_field("metadata", DataType.JSON)
        if not 0 < layout < 3:
            schema.add_field("labels", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=MAX_LABELS,
                             max_length=LABEL_MAX_BYTES)
        schema.add_function(Function(name=f"{bm25_input}_bm25", function_type=FunctionType.BM25,
                                     input_field_names=[bm25_input], output_field_names=["sparse"]))
        index = client.prepare_index_params()
        # created empty: FLAT on Lite (exact, and fast enough below IVF_FROM rows), a server picks its own;
        # fit_index switches a grown collection
        choose_index(self.on_lite, 0).add_to(index)
        index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        client.create_collection(name, schema=schema, index_params=index)

    def dense_index(self) -> DenseIndex:
        """The dense index the chunk collection has now."""
        found = self.client.describe_index(self.collection, "vector")
        params = {"nlist": int(found["nlist"])} if "nlist" in found else {}
        return DenseIndex(str(found.get("index_type", "")), params)

    def fit_index(self, rows: int, ivf_from: int = IVF_FROM) -> DenseIndex:
        """Give the chunk collection the dense index `choose_index` says `rows` chunks should have, rebuilding it
        when it differs (on Lite: released, the index dropped and built again, loaded: searches fail meanwhile, so
        only with exclusive access or at a quiet moment). Returns the index it has."""
        wanted, current = choose_index(self.on_lite, rows, ivf_from), self.dense_index()
        if current.index_type == wanted.index_type and (wanted.index_type != "IVF_FLAT" or current == wanted):
            return current
        client = self.client
        client.release_collection(self.collection)
        client.drop_index(self.collection, "vector")
        index = client.prepare_index_params()
        wanted.add_to(index)
        client.create_index(self.collection, index)
        client.load_collection(self.collection)
        log.info("dense index of %s: %s -> %s %s (%d rows)", self.collection, current.index_type,
                 wanted.index_type, wanted.params, rows)
        return wanted

    def create_registry(self) -> None:
        from pymilvus import DataType

        client = self.client
        schema = client.create_schema(auto_id=False, enable_dynamic_field=False,
                                      description="rag-workbench document registry")
        # The key is a hash: Milvus Lite's delete by a VARCHAR primary key containing `'` fails with an
        # SQL syntax error inside Lite, and doc_ids may contain quotes.
        schema.add_field("key", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("doc_id", DataType.VARCHAR, max_length=1024)
        for name in ("version", "state", "content_hash", "fingerprint", "ingested_at"):
            schema.add_field(name, DataType.VARCHAR, max_length=128)
        schema.add_field("committed_ns", DataType.INT64)  # when the row was written (active: the commit)
        schema.add_field("file_name", DataType.VARCHAR, max_length=1024)
        schema.add_field("extension", DataType.VARCHAR, max_length=32)
        schema.add_field("size_bytes", DataType.INT64)
        schema.add_field("chunks", DataType.INT64)
        schema.add_field("_unused", DataType.FLOAT_VECTOR, dim=2)  # Milvus requires a vector field
        index = client.prepare_index_params()
        index.add_index("_unused", index_type="FLAT", metric_type="L2")
        client.create_collection(self.registry, schema=schema, index_params=index)

