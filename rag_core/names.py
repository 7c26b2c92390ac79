"""The one rule for knowledge-base names, which are also Milvus collection names.

A knowledge base NAME is stored in the collections NAME (chunks) and NAME_docs (its registry); a schema
migration builds NAME__migrating for a while, and the catalog of knowledge bases is a collection too. So a
name must be a valid Milvus collection name with room for those suffixes, and must not be one of the names
another knowledge base's collections use. Checked before Milvus sees a name (its error is an RPC failure).

Names are compared without letter case: Milvus Lite keeps each collection in an SQLite table, and SQLite
compares table names without case, so `biz` and `BIZ` are two collections sharing one table (dropping one
empties the other; measured with milvus-lite 2.5.1). Kept originals live in folders named after
the knowledge base, which a case-insensitive file system (macOS, Windows) shares the same way.
Pure: importable by the settings (`milvus.collection` names the default knowledge base) and the store.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

CATALOG = "rag_knowledge_bases"  # the catalog's own collection (rag_core.kb.catalog)
REGISTRY_SUFFIX = "_docs"
MIGRATING = "__migrating"  # suffix of the temporary copy a schema migration builds
UPGRADE = "__emb_"  # NAME__emb_<embedder>: the chunk collection an embedder upgrade fills (rag_core.kb.upgrade)
MAX_LENGTH = 255 - len(MIGRATING)  # Milvus allows 255 characters; the migration copy must fit
_MILVUS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RULE = (f"use letters, digits and underscores, starting with a letter or underscore, at most {MAX_LENGTH} "
        f"characters, not ending in {REGISTRY_SUFFIX!r} or {MIGRATING!r}")


def fold(name: str) -> str:
    """`name` as the store compares it (names are ASCII: lower case is enough)."""
    return name.lower()


def collections_of(name: str) -> tuple[str, str, str]:
    """Every collection knowledge base `name` uses: chunks, registry, a migration's temporary copy."""
    return name, name + REGISTRY_SUFFIX, name + MIGRATING


def upgrade_collection(name: str, provider: str) -> str:
    """The chunk collection knowledge base `name` fills with embedder `provider`'s vectors during an upgrade (and
    searches after the swap)."""
    slug = re.sub(r"[^A-Za-z0-9_]", "_", provider)
    full = f"{name}{UPGRADE}{slug}"
    return full if len(full) <= 255 else f"{name[:200]}{UPGRADE}{hashlib.sha256(slug.encode()).hexdigest()[:12]}"


def upgrades_of(name: str, present: Iterable[str]) -> list[str]:
    """The collections among `present` that knowledge base `name`'s upgrades made (NAME__emb_*)."""
    return [c for c in present if fold(c).startswith(fold(name + UPGRADE))]


def same_as(name: str, others: Iterable[str]) -> str | None:
    """The first of `others` that is `name` with other letter case (the store takes it for `name`), or None."""
    return next((other for other in others if other != name and fold(other) == fold(name)), None)


def name_problem(name: object) -> str | None:
    """Why `name` cannot name a knowledge base (a sentence naming it), or None when it can."""
    if not isinstance(name, str) or not name:
        return f"{name!r} is not a valid knowledge base name: give a name ({RULE})."
    if len(name) > MAX_LENGTH or not _MILVUS_NAME.fullmatch(name):
        return f"{name!r} is not a valid knowledge base name (it names Milvus collections): {RULE}."
    if fold(name).endswith(REGISTRY_SUFFIX) or fold(name).endswith(MIGRATING):
        return (f"{name!r} is not a valid knowledge base name: names ending in {REGISTRY_SUFFIX!r} or {MIGRATING!r} "
                "(in any letter case) are another knowledge base's registry or migration collections.")
    if UPGRADE in fold(name):
        return (f"{name!r} is not a valid knowledge base name: names containing {UPGRADE!r} are another knowledge "
                "base's chunk collections for a new embedder.")
    if fold(name) == CATALOG:
        return f"{name!r} is reserved: it is the collection holding the catalog of knowledge bases ({CATALOG})."
    return None
