"""The knowledge bases as a Model Context Protocol server (the official `mcp` SDK), for Claude Desktop, Cursor,
Cline and any other MCP client: search, explain, documents, a document's chunks, knowledge bases.

    python -m rag_core mcp          # over stdio (rag_core.cli.mcp)
    POST /mcp on `serve`            # over streamable HTTP, behind the service's token (rag_core.service.mcp_http)

An entry point like the CLI and the service: each tool parses its arguments, calls the one lookup path (or the
store) and answers what the CLI's `--json` prints. It imports no bootstrap: its callers hand it the open
knowledge bases (`server.Library`)."""

from .server import Library, build_server

__all__ = ["Library", "build_server"]
