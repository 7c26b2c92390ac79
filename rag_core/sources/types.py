"""The source types: a type's name -> the factory of its reader, `factory(location, options, known, cache_dir=)`
returning a ports.SourceReader. `options`: a folder's `include`/`exclude` glob lists, the strings `--option K=V`
gave for the others; `known`: each path's version as the last sync indexed it (path -> SourceItem.version), for
sources that ask "changed since?" (a web page's ETag); `cache_dir`: where a type keeps what it fetched (a Git
mirror). A secret a type needs (a token) it reads from the environment itself, by a name its options give. A new
type is its module in rag_core/sources and one line here, imported when it builds."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import SourceError
from ..ports import SourceReader

TYPES: dict[str, str] = {
    "folder": "rag_core.sources.folder:build",
    "git": "rag_core.sources.git:git_reader",
    "web": "rag_core.sources.web:web_reader",
    "notion-export": "rag_core.sources.exports:notion_export",
    "confluence": "rag_core.sources.confluence:confluence_reader",
    "confluence-export": "rag_core.sources.exports:confluence_export",
}


def check_type(kind: str) -> str:
    if kind not in TYPES:
        raise SourceError(f"unknown source type {kind!r}; known types: {', '.join(sorted(TYPES))}")
    return kind


def build_reader(kind: str, location: str, options: Mapping[str, Any],
                 known: Mapping[str, str] | None = None, *, cache_dir: Path) -> SourceReader:
    """The reader of a source of type `kind` (SourceError naming the known types for another); `cache_dir`: where a
    type keeps what it fetched (a Git mirror), shared by every source of the data folder."""
    module, _, name = TYPES[check_type(kind)].partition(":")
    factory = getattr(importlib.import_module(module), name)
    reader: SourceReader = factory(location, options, dict(known or {}), cache_dir=cache_dir)
    return reader
