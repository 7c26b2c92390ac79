"""The MCP server: five tools over the knowledge bases of one data folder, each taking `kb`.

- `search`: the one lookup path; its result is exactly what `python -m rag_core search QUERY --json` prints (and
  `GET /v1/search` answers): every raw hit with its fate, the evidence, what was dropped and why, the agent's
  projection, timings. Arguments are named as the CLI's options and /v1/search's parameters; `history` (the
  conversation before the query, as {"role", "content"} objects) makes a follow-up question standalone first
  (`rewrite` in the result).
- `explain`: "why wasn't it retrieved?", as `explain QUERY --expect ... --json` (`history` too).
- `list_documents` (as `docs --json`), `read_document_chunks` (as `GET /v1/documents/{doc_id}/chunks`),
  `list_knowledge_bases` (as `kb list --json`).

A result is a JSON text (formatted as the CLI prints it) with the same object as structured content. A bad
argument (a wrong type, an unknown name, a value a setting's rules refuse, a knowledge base or document that
does not exist) is a tool error (`isError`) with one line saying what is wrong; the server keeps serving.

The blocking work (embedding, Milvus) runs in worker threads; on the service, lookups share the queue of
/v1/search (`Library.lookup_threads`).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from ..access.checks import lookup_access, unknown_kb
from ..access.records import EVERYONE, Principal, Role
from ..errors import KnowledgeBaseNotFound, RagError, for_client
from ..identity import stored_chunks
from ..retrieval.options import LOOKUP_OPTIONS, given, lookup_overrides

if TYPE_CHECKING:
    from ..kb.pool import OpenKnowledgeBases
    from ..workbench import Workbench

NAME = "rag-workbench"
INSTRUCTIONS = (
    "Search the workbench's knowledge bases (internal runbooks, policies, product and service documentation). "
    "`search` returns the evidence with its evidence keys (`doc_id#chunk-N`, or `doc_id#chunk-3..5` for a block of "
    "neighbouring hits): cite them in square brackets. "
    "`list_knowledge_bases` names the knowledge bases every tool's `kb` argument takes (default: the default one).")

@dataclass(frozen=True)
class Library:
    """What the tools reach: the knowledge bases of one data folder, each opened on first use (the service's pool,
    or the one `python -m rag_core mcp` opens), the threads lookups run in (None: anyio's default pool), and who
    calls a tool (`caller`, given the tool's Context: over HTTP, the principal of its request; None: EVERYONE, the
    person running `python -m rag_core mcp`)."""

    kbs: OpenKnowledgeBases
    lookup_threads: anyio.CapacityLimiter | None = None
    caller: Callable[[Context[Any, Any] | None], Principal] | None = None

    def principal(self, ctx: Context[Any, Any] | None) -> Principal:
        return EVERYONE if self.caller is None else self.caller(ctx)

    def workbench(self, kb: str | None, principal: Principal = EVERYONE) -> Workbench:
        """The knowledge base `kb` (None: the default one); one `principal` cannot read is answered as one that does
        not exist, naming only those it can (every tool only reads: the reader role is enough)."""
        name = kb or self.kbs.default
        if not principal.can(name, Role.READER):
            raise unknown_kb(name, self.readable(principal))
        try:
            return self.kbs.get(kb or None)
        except KnowledgeBaseNotFound:
            if principal.everything:
                raise
            raise unknown_kb(name, self.readable(principal)) from None

    def readable(self, principal: Principal) -> list[str]:
        return principal.readable(self.kbs.manager.names())


# The arguments, described once and shared by the tools that take them; a lookup's options are declared in
# retrieval.options (their names, types, ranges and help, as the CLI's flags and /v1/search's parameters).
Kb = Annotated[str | None, Field(description="The knowledge base (list_knowledge_bases names them); default: "
                                             "the default one.")]
History = Annotated[list[dict[str, Any]] | None, Field(description=(
    "The conversation before the query, oldest first: {\"role\": \"user\" or \"assistant\", \"content\": "
    "\"...\"} objects (other roles are skipped). A follow-up question (\"Which command shows it?\") is then searched "
    "as the standalone question it means; the result's `rewrite` says what was searched and why."))]


def _lookup_tool(fn: Callable[..., Any], explaining: bool) -> Callable[..., Any]:
    """`fn(..., kb, **options)` with a signature the SDK reads its input schema from: its own arguments, then
    every lookup option (retrieval.options) the tool takes."""
    own = [p for p in inspect.signature(fn, eval_str=True).parameters.values()
           if p.kind is not inspect.Parameter.VAR_KEYWORD]
    options = [inspect.Parameter(o.surface_name, inspect.Parameter.KEYWORD_ONLY, default=False if o.flag else None,
                                 annotation=Annotated[o.annotation, Field(description=o.description, ge=o.ge, le=o.le)])
               for o in LOOKUP_OPTIONS if o.explain or not explaining]
    fn.__signature__ = inspect.Signature([*own, *options], return_annotation=CallToolResult)  # type: ignore[attr-defined]
    return fn


def json_text(value: Any) -> str:
    """As `--json` prints it (rag_core.cli.output.print_json): text unescaped, two-space indent."""
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def _answer(value: Any) -> CallToolResult:
    # Structured content must be an object: a list goes under "items" there (the text is the list itself).
    structured = value if isinstance(value, dict) else {"items": value}
    return CallToolResult(content=[TextContent(type="text", text=json_text(value))], structured_content=structured)


def _refusal(message: str) -> CallToolResult:
    """A tool error in one line, as a client gets it (errors.for_client: no internal addresses, no CLI advice)."""
    return CallToolResult(content=[TextContent(type="text", text=" ".join(for_client(message).split()))],
                          is_error=True)


def _one_line(error: ValidationError) -> str:
    """pydantic's errors of a tool's arguments as one line: `retrieve_k: Input should be a valid integer (got 'x')`."""
    parts = []
    for err in error.errors()[:3]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        text = "is required" if err.get("type") == "missing" else str(err.get("msg", "invalid"))
        if err.get("type") != "missing" and not isinstance(err.get("input"), (dict, list, type(None))):
            text += f" (got {str(err['input'])[:60]!r})"
        parts.append(f"{where}: {text}")
    more = f" (and {error.error_count() - 3} more)" if error.error_count() > 3 else ""
    return "; ".join(parts) + more + "."


class KnowledgeBaseServer(MCPServer):
    """MCPServer whose tool errors are one line for a person: unknown arguments are refused by name (pydantic
    would ignore them: a misspelt `retrieveK` would silently search with the default) and pydantic's
    multi-line validation report becomes one line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arguments: dict[str, tuple[str, ...]] = {}

    async def run_stdio_async(self) -> None:
        """Over stdin/stdout, a line that is not a JSON-RPC message answered with a JSON-RPC error (mcp.stdio)."""
        from .stdio import run

        await run(self._lowlevel_server)

    def add_knowledge_tool(self, fn: Callable[..., Any]) -> None:
        """A tool whose description is its docstring without the code's indentation; every tool here only reads
        (readOnlyHint: clients may call them without asking), and answers only from the knowledge bases (closed
        world)."""
        self.add_tool(fn, description=inspect.cleandoc(fn.__doc__ or ""), structured_output=False,  # built: _answer
                      annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                                  open_world_hint=False))
        # The arguments a client may send: not the Context the SDK passes in.
        self.arguments[fn.__name__] = tuple(name for name, p in inspect.signature(fn).parameters.items()
                                            if p.annotation is not Context and p.annotation != "Context")

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None) -> Any:
        known = self.arguments.get(name)
        unknown = sorted(set(arguments) - set(known or ()))
        if known is not None and unknown:
            raise ToolError(f"{name}: unknown argument{'s' if len(unknown) > 1 else ''} "
                            f"{', '.join(map(repr, unknown))}; it takes {', '.join(known)}.")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(f"{name}: {_one_line(exc.__cause__)}") from None
            raise


def build_server(library: Library) -> KnowledgeBaseServer:
    """The server with its five tools over `library` (run it over stdio, or mount it on HTTP)."""
    # log_level: the SDK configures the root logger (logging.basicConfig) when a server is made; at WARNING it
    # prints what Python would print anyway, not a line per request on the service's or the stdio server's stderr.
    server = KnowledgeBaseServer(NAME, instructions=INSTRUCTIONS, version=_version(), log_level="WARNING")

    async def run(work: Callable[[], Any], limiter: anyio.CapacityLimiter | None = None) -> CallToolResult:
        """`work` in a worker thread; a RagError (bad input, a missing knowledge base or document, a store that
        does not answer) is the tool's error, in the words written for people everywhere else."""
        try:
            return _answer(await anyio.to_thread.run_sync(work, limiter=limiter))
        except RagError as exc:
            return _refusal(str(exc))

    async def search(ctx: Context, query: Annotated[str, Field(description="What to look for.")], kb: Kb = None,
                     history: History = None, **options: Any) -> CallToolResult:
        """Search a knowledge base by the one lookup path (what the retrieval debugger shows and the chat agent
        gets). The result is what `python -m rag_core search QUERY --json` prints: `evidence` (the kept chunks,
        each with its `evidence_key` to cite as [doc_id#chunk-N]), `raw_hits` (every candidate with its fate and
        the reason it was dropped), `dropped`, `projection` (what the agent reads), `params`, `timings`, and
        `rewrite` (with `history`: the question searched, rewritten or kept, and why; else null), `blocks` (each
        evidence block: its key, the hits it holds in `matched`, how it grew with `expand`, its tokens and text) and
        `context` (the expansion, merging and token budgets the lookup ran with, and the tokens the agent's evidence
        takes)."""
        principal = library.principal(ctx)

        def work() -> dict[str, Any]:
            wb = library.workbench(kb, principal)
            overrides = lookup_overrides(given(options), wb.settings)
            return wb.retriever.lookup(query, history=history, **overrides,
                                       **lookup_access(principal.scope(wb.settings.kb_name))).to_dict()

        return await run(work, library.lookup_threads)

    async def explain(ctx: Context,
                      query: Annotated[str, Field(description="The question, as the agent would search it.")],
                      expect: Annotated[str | None, Field(description="The document that should be retrieved "
                                                          "(`doc_id`), one chunk (`doc_id#chunk-N`), or any chunk "
                                                          "of a block's range (`doc_id#chunk-3..5`).")] = None,
                      answer: Annotated[str | None, Field(description="The expected answer text: which chunks "
                                                          "hold it, and whether a chunk boundary splits it.")] = None,
                      kb: Kb = None, history: History = None, **options: Any) -> CallToolResult:
        """Why wasn't it retrieved? For each chunk of the expected document (or the chunks holding the expected
        answer): its rank in each channel over the whole knowledge base, its fate in the lookup (kept, beyond
        retrieve-k, capped, beyond return-n), and the smallest change of retrieve-k / max-chunks-per-document /
        return-n that brings it into the evidence. As `python -m rag_core explain QUERY --expect ... --json`."""
        from ..retrieval.explain import explain_dict

        principal = library.principal(ctx)

        def work() -> dict[str, Any]:
            wb = library.workbench(kb, principal)
            return explain_dict(wb, query, expect, answer, history=history,
                                **lookup_overrides(given(options), wb.settings),
                                **lookup_access(principal.scope(wb.settings.kb_name)))

        return await run(work, library.lookup_threads)

    async def list_documents(ctx: Context, kb: Kb = None) -> CallToolResult:
        """The documents of a knowledge base you may retrieve: `doc_id`, chunks, size, when ingested, whether its
        original is kept (as `python -m rag_core docs --json`); for an admin of it every one, with its
        `access_groups`."""
        principal = library.principal(ctx)

        def work() -> list[dict[str, Any]]:
            wb = library.workbench(kb, principal)
            return wb.documents_json(principal.scope(wb.settings.kb_name))

        return await run(work)

    async def read_document_chunks(ctx: Context,
                                   doc_id: Annotated[str, Field(description="The document, as list_documents "
                                                                 "names it (e.g. runbooks/cpu_high.md).")],
                                   kb: Kb = None) -> CallToolResult:
        """A document's chunks in order (its active version), each with its `evidence_key`, heading path, offsets
        in the document's text and content (as `GET /v1/documents/{doc_id}/chunks`)."""
        return await run(partial(document_chunks, library, doc_id, kb, library.principal(ctx)))

    async def list_knowledge_bases(ctx: Context,
                                   kb: Annotated[str | None, Field(description="Only this knowledge base (as "
                                                                   "`kb show`); default: every one.")] = None,
                                   ) -> CallToolResult:
        """The knowledge bases of this data folder you may read, each with its documents, chunks, embedder and the
        settings it keeps (as `python -m rag_core kb list --json`); every other tool's `kb` argument takes these
        names."""
        principal = library.principal(ctx)

        def work() -> list[dict[str, Any]]:
            manager = library.kbs.manager
            if kb and not principal.can(kb, Role.READER):
                raise unknown_kb(kb, library.readable(principal))
            return [manager.info(name).to_dict() for name in ([kb] if kb else library.readable(principal))]

        return await run(work)

    for tool in (_lookup_tool(search, False), _lookup_tool(explain, True), list_documents, read_document_chunks,
                 list_knowledge_bases):
        server.add_knowledge_tool(tool)
    return server


def document_chunks(library: Library, doc_id: str, kb: str | None,
                    principal: Principal = EVERYONE) -> dict[str, Any]:
    """`{"doc_id", "version", "chunks": [...]}` with the fields of `GET /v1/documents/{doc_id}/chunks`."""
    from ..errors import NotFound

    wb = library.workbench(kb, principal)
    doc_id = wb.ingestor.resolve_doc_id(doc_id)  # a name ingest refuses (`..`, a NUL) never reaches the store
    rows = wb.store.get_chunks(doc_id)
    if not rows or not wb.shows(principal.scope(wb.settings.kb_name), doc_id):  # hidden: as an unknown one
        raise NotFound(f"No document {doc_id!r} in knowledge base {wb.settings.kb_name!r} (list_documents lists "
                       "them).")
    return {"doc_id": doc_id, "version": rows[0].version, "chunks": stored_chunks(doc_id, rows)}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rag-workbench")
    except PackageNotFoundError:
        return "0"
