"""The parser of `python -m rag_core`: the global options, then each command group's own (one module each)."""

from __future__ import annotations

import argparse

from . import (
    audit,
    chat,
    chunks,
    config,
    documents,
    evaluation,
    feedback,
    host,
    kb,
    mcp,
    reindex,
    search,
    serve,
    sources,
    users,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rag_core", description="Knowledge-base workbench for RAG.")
    parser.add_argument("--data-dir", help="where milvus.db and kept originals live (default ./data, $RAG_DATA_DIR)")
    parser.add_argument("--config", help="a rag.toml (default ./rag.toml when present, $RAG_CONFIG)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a setting, e.g. --set chunk.max-size=600 (repeatable; `config` lists them)")
    parser.add_argument("--kb", metavar="NAME", help="the knowledge base to work on (default: milvus.collection, "
                                                      "`biz`; `kb list` shows them)")
    parser.add_argument("--server", metavar="URL",
                        help="run search, explain, kb list, docs or ingest against a running server (`serve`) "
                             "instead of the local data folder, with the token in $RAG_TOKEN (default $RAG_SERVER)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of unexpected errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # In this order in `--help`: the documents, the lookup, rebuilding the index, the settings, then the rest.
    for group in (documents, chunks, search, reindex, config, kb, sources, chat, feedback, evaluation, serve, mcp, host,
                  users, audit):
        group.register(sub)
    return parser
