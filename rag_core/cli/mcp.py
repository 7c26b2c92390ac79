"""`python -m rag_core mcp`: the knowledge bases as an MCP server over stdio (rag_core.mcp), for Claude Desktop,
Cursor, Cline and other MCP clients, which start it as a subprocess. stdout carries the protocol, so nothing
else is printed there; notes go to stderr."""

from __future__ import annotations

import argparse

from ..config import Settings
from .workbench import workbench


def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    import anyio

    from ..bootstrap import open_knowledge_bases
    from ..mcp import Library, build_server

    with workbench(settings, asked=getattr(args, "asked", ())) as wb:  # --kb: the knowledge base tools default to
        kbs = open_knowledge_bases(wb, settings, own_first=False)
        try:
            anyio.run(build_server(Library(kbs)).run_stdio_async)
        finally:
            kbs.close_all()  # the others opened meanwhile; `wb` closes with the workbench
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp", help="serve the knowledge bases to MCP clients (Claude Desktop, Cursor) over stdio",
        description="An MCP server over stdin/stdout with the tools search, explain, list_documents, "
                    "read_document_chunks and list_knowledge_bases, each taking `kb` (default: --kb, else the "
                    "default knowledge base). `serve` offers the same server over HTTP at /mcp.")
    p.set_defaults(func=cmd_mcp)
