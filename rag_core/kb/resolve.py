"""Which knowledge base a run opens, and the migration from the time before knowledge bases.

Databases made by earlier releases hold one collection per "knowledge base" (`milvus.collection`, default
`biz`, plus any made with `--set milvus.collection=...`) and no catalog. When the catalog is first created,
every collection this workbench made becomes a knowledge base of the same name, with its vectors, registry
and kept originals where they are: nothing is copied or embedded again. Its embedder is the one the
collection records, its chunking the one its documents' fingerprints were made with (found by trying the
usual values), its search defaults the configured ones.
The default knowledge base (`milvus.collection`) always exists: it is made on first use, like the single
collection was; its catalog entry is written once it has opened (bootstrap.build_workbench), so a first command
whose settings cannot work (an embedder that cannot be built) leaves nothing behind.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

from ..config import Settings
from ..embedding.fusion_defaults import FUSION_KEYS
from ..errors import KnowledgeBaseError, KnowledgeBaseNotFound, StoreError
from ..ingest import fingerprint
from ..names import REGISTRY_SUFFIX, collections_of, name_problem, same_as
from ..ports import DatabaseCatalog, KnowledgeBaseCatalog
from ..records import KnowledgeBase
from ..store.milvus.rows import utc_now
from .settings import defaults_for_new, embedder_of, joined, with_measured_expand, with_measured_fusion

log = logging.getLogger(__name__)
APP = "rag-workbench"  # what the workbench records in its collections' descriptions (store.schema)
ADOPTED = "adopted: the collection existed before knowledge bases"


def check_name(name: str) -> str:
    if problem := name_problem(name):
        raise KnowledgeBaseError(problem, "bad_name")
    return name


def database_of(catalog: KnowledgeBaseCatalog) -> DatabaseCatalog | None:
    """`catalog` when it is kept in the knowledge bases' database, so it can say which collections that holds
    (ports.DatabaseCatalog); None for a catalog without a database (kb.memory: nothing is stored)."""
    return catalog if isinstance(catalog, DatabaseCatalog) else None


def resolve(catalog: KnowledgeBaseCatalog, settings: Settings, *, record: bool = True) -> KnowledgeBase:
    """The knowledge base `settings` choose (`settings.kb_name`). The default one is made when missing
    (adopting its collection when one exists); another name must exist. A catalog kept in the database
    (ports.DatabaseCatalog) recognises the collections made before it. `record`: write a default made now to the
    catalog; when False it is returned unwritten (committed_ns 0), for the caller to write once it has opened (or
    never, when only its values are wanted)."""
    name = check_name(settings.kb_name)
    database = database_of(catalog)
    if database is not None and database.created:
        adopt_collections(database, settings)
    kb = catalog.get(name)
    if kb is not None:
        return kb
    if name != settings["milvus.collection"]:
        raise not_found(catalog, name)
    if problem := case_clash(catalog, name):
        raise KnowledgeBaseError(f"milvus.collection (the default knowledge base): {problem}", "exists")
    kb = _default(name, settings, database)
    return catalog.write(kb) if record else kb


def case_clash(catalog: KnowledgeBaseCatalog, name: str) -> str | None:
    """Why a knowledge base `name` cannot be made because the store would take it for another one: a knowledge
    base or collection whose name differs from it (or from its registry's, its migration copy's) only by letter
    case (names). A sentence naming that one, or None."""
    entries = [kb.name for kb in (*catalog.list_knowledge_bases(), *catalog.unfinished())]
    if other := same_as(name, entries):
        return (f"{name!r} differs only by letter case from the knowledge base {other!r}, and Milvus Lite stores "
                f"names that differ only by case in the same place; use {other!r}, or choose another name.")
    if (database := database_of(catalog)) is not None:
        present = database.list_collections()
        for mine in collections_of(name):
            if other := same_as(mine, present):
                return (f"the database has a collection {other!r}, which Milvus Lite takes for {mine!r} (names "
                        f"that differ only by case share their storage); choose another name than {name!r}.")
    return None


def not_found(catalog: KnowledgeBaseCatalog, name: str) -> KnowledgeBaseError:
    names = [kb.name for kb in catalog.list_knowledge_bases()]
    unfinished = next((kb for kb in catalog.unfinished() if kb.name == name), None)
    if unfinished is not None and unfinished.state == "creating":
        why = f"Knowledge base {name!r} is still being created ({unfinished.note or 'a copy in progress'})"
    elif unfinished is not None:
        why = f"Knowledge base {name!r} is being deleted"
    elif other := same_as(name, names):
        return KnowledgeBaseNotFound(f"There is no knowledge base {name!r}; did you mean {other!r}? (A name is "
                                     "written with its letter case, and none can differ from another only by case.)")
    else:
        why = f"There is no knowledge base {name!r}"
    listed = f"the knowledge bases are {', '.join(names)}" if names else "there are none yet"
    return KnowledgeBaseNotFound(f"{why}; {listed} (`python -m rag_core kb list`; make one with "
                                 f"`python -m rag_core kb create {name}`).")


def _default(name: str, settings: Settings, database: DatabaseCatalog | None) -> KnowledgeBase:
    values = defaults_for_new(settings)
    configured = {**values, **{key: settings[key] for key in FUSION_KEYS}}  # the note names what was measured
    measured = with_measured_fusion(configured, settings.explicit)[1]
    note = joined(joined("the default knowledge base (milvus.collection)", measured),
                  with_measured_expand({}, settings.explicit)[1])
    if database is not None and database.has_collection(name):
        meta = database.collection_meta(name)
        if meta.get("app") != APP:
            raise StoreError(f"Collection {name!r} exists but was not created by this workbench; choose another "
                             "milvus.collection.")
        values.update(adopted_values(database, name, meta, values))
        note = ADOPTED
    return KnowledgeBase(name, values, created_at=utc_now(), note=note)


def adopted_values(database: DatabaseCatalog, name: str, meta: Mapping[str, Any],
                   values: Mapping[str, Any]) -> dict[str, Any]:
    """The embedder a collection records and the chunking its documents were indexed with, read back from a
    registry fingerprint (the configured chunking when it has no documents or none of the usual values fits)."""
    adopted = embedder_of(meta, values)
    sample = database.sample_fingerprint(name)
    if sample is not None:
        found = chunking_of(sample[0], sample[1], str(meta.get("embedder", "")),
                            (values["chunk.max-size"], values["chunk.overlap"]))
        if found is not None:
            adopted["chunk.max-size"], adopted["chunk.overlap"] = found
    return adopted


def chunking_of(fp: str, content_hash: str, embedder_name: str, first: tuple[int, int]) -> tuple[int, int] | None:
    """The (max size, overlap) a fingerprint was made with: `first`, the defaults, then every pair in steps of 10
    up to 4,000 characters (~80,000 hashes, a fraction of a second). None when none fits."""
    def pairs() -> Iterator[tuple[int, int]]:
        yield first
        yield 800, 100
        for size in range(20, 4001, 10):
            for overlap in range(0, size, 10):
                yield size, overlap

    return next((p for p in pairs() if fingerprint(content_hash, p[0], p[1], embedder_name) == fp), None)


def adopt_collections(catalog: DatabaseCatalog, settings: Settings) -> list[str]:
    """Make every collection this workbench created (with its registry) a knowledge base, unless the catalog
    has it already. Runs when the catalog is first created, and by `migrate`. Returns the names adopted."""
    names = set(catalog.list_collections())
    # A collection named like a listed knowledge base in other case shares its storage (names): one left
    # behind by the delete of such a name (see manage.KnowledgeBases.delete) is not made a knowledge base again.
    # Collections made before the catalog are all adopted, case variants included, as they were used.
    listed = [kb.name for kb in catalog.list_knowledge_bases()]
    adopted = []
    for name in sorted(names):
        if name_problem(name) or name + REGISTRY_SUFFIX not in names or catalog.get(name) is not None:
            continue
        if same_as(name, listed):
            log.warning("collection %s not adopted: knowledge base %s differs from it only by case", name,
                        same_as(name, listed))
            continue
        meta = catalog.collection_meta(name)
        if meta.get("app") != APP:
            continue
        values = defaults_for_new(settings)
        values.update(adopted_values(catalog, name, meta, values))
        catalog.write(KnowledgeBase(name, values, created_at=utc_now(), note=ADOPTED))
        adopted.append(name)
    if adopted:
        log.info("adopted %d existing collections as knowledge bases: %s", len(adopted), ", ".join(adopted))
    return adopted
