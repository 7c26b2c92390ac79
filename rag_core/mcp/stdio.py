"""The MCP server over stdin/stdout, answering every line.

The SDK's stdio transport logs a line that is not a JSON-RPC message (garbage, a lone surrogate escape such as
`"\\ud800"`) and sends nothing back, so a client waiting for its request's answer waits forever, where the same
message over HTTP `/mcp` gets a 400. Here such a line gets a JSON-RPC error (-32700 parse error when it is not
JSON, -32600 invalid request when it is JSON but not a message this server reads), with the request's id when one
can be read from it (else null, as JSON-RPC says), and the server reads on.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from io import TextIOWrapper
from typing import Any

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage


def rejection(line: str) -> types.JSONRPCError | None:
    """The error that answers `line`, or None when it is a JSON-RPC message (or blank: nothing to answer)."""
    if not line.strip():
        return None
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except ValueError:
        pass
    try:
        data = json.loads(line)  # Python reads what pydantic refuses (a lone surrogate): find the id in it
    except ValueError:
        return _error(types.PARSE_ERROR, "Parse error: the line is not JSON.", None)
    rid = data.get("id") if isinstance(data, dict) else None
    rid = rid if isinstance(rid, (int, str)) and not isinstance(rid, bool) and _is_text(rid) else None
    if not _is_text(data):
        return _error(types.PARSE_ERROR, "Parse error: the message holds a lone surrogate (\\ud800-\\udfff), "
                      "which is not text.", rid)
    return _error(types.INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 request, notification or response.",
                  rid)


def _is_text(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode()
        return True
    except UnicodeEncodeError:
        return False


def _error(code: int, message: str, rid: int | str | None) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=message))


class _CheckedLines:
    """stdin's lines for the SDK's reader, without those `rejection` answers: those are answered through `reply`."""

    def __init__(self, lines: AsyncIterable[str], reply: Callable[[types.JSONRPCError], Awaitable[None]]) -> None:
        self._lines = lines
        self._reply = reply

    def __aiter__(self) -> AsyncIterator[str]:
        return self._checked()

    async def _checked(self) -> AsyncIterator[str]:
        async for line in self._lines:
            error = rejection(line)
            if error is None:
                if line.strip():
                    yield line
            else:
                await self._reply(error)


async def run(lowlevel: Any) -> None:
    """Serve `lowlevel` (the SDK's low-level Server) over this process's stdin and stdout until stdin ends."""
    ready = anyio.Event()
    out: list[Any] = []

    async def reply(error: types.JSONRPCError) -> None:
        await ready.wait()
        await out[0].send(SessionMessage(error))

    stdin = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    async with stdio_server(stdin=_CheckedLines(stdin, reply)) as (read_stream, write_stream):  # type: ignore[arg-type]
        out.append(write_stream)
        ready.set()
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
