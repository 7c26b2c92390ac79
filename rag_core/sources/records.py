"""What a source's reader gives the sync (issue 38): the items at the source now, each named by the path its document
gets under the source's folder, with its content read only when the sync needs it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class SourceItem:
    """One document at the source.

    `path`: where it sits in the source ("runbooks/disk.md"; "/"-separated, relative, no "..": the sync puts it under
    the source's folder in the knowledge base, so it is the document's identity from one sync to the next).
    `read`: fetches its bytes (called only for an item the sync cannot skip); raises SourceError, one line, for an
    item that cannot be read (counted as failed with that reason; the sync goes on). `version`: a cheap change
    marker when the source has one (a Git blob id, an ETag or Last-Modified, a Confluence page version, a file's
    size and mtime), so an unchanged item is skipped without being read; "" when there is none (the content hash
    decides). `url`: where a person opens it (the web page, the Confluence page, the Git file at its commit, a
    file:// URL), kept as the document's provenance. `meta`: what the source knows about it (author, commit,
    title, ...: string values), kept with the document. `groups`: access groups the source gives it (Confluence
    page restrictions), () when the source has none."""

    path: str
    read: Callable[[], bytes]
    version: str = ""
    url: str = ""
    meta: Mapping[str, str] = field(default_factory=dict)
    groups: tuple[str, ...] = ()
