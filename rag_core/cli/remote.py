"""`--server URL` (or RAG_SERVER): the commands that work against a running server (`python -m rag_core serve`)
call its HTTP API instead of opening the local data folder, and print exactly what they print locally.

The server's answers are the JSON of the same records (`search --json` is what /v1/search answers), so each is mapped
back to what the local command's printing function reads, never printed by a formatter of its own. The token comes
from the environment only (RAG_TOKEN, else RAG_API_TOKEN): never an argument, never printed. What the server refuses
is one line, as local errors are: 401 says a token is needed, 403 and 404 are the server's message (403 names the
missing role), a server that cannot be reached, times out, fails (5xx) or answers other than JSON is named with what
went wrong."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote

import httpx

from ..errors import Forbidden, NotFound, RagError, Unauthenticated

# A lookup answers in seconds, but an upload is read, chunked and embedded before the answer: room to spare.
TIMEOUT = httpx.Timeout(300.0, connect=10.0)
TOKEN_VARIABLES = ("RAG_TOKEN", "RAG_API_TOKEN")


class Server:
    """The HTTP API at `url`, called with the token of the environment (none: a server nobody signs in to)."""

    def __init__(self, url: str, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        self.url = url.rstrip("/")
        if not self.url.startswith(("http://", "https://")):
            raise RagError(f"--server {url}: give the server's address with http:// or https://, e.g. "
                           "--server http://127.0.0.1:8000.")
        self.token_variable = next((v for v in TOKEN_VARIABLES if env.get(v)), "")
        headers = {"Authorization": f"Bearer {env[self.token_variable]}"} if self.token_variable else {}
        self.client = httpx.Client(base_url=self.url, headers=headers, timeout=TIMEOUT)

    def close(self) -> None:
        self.client.close()

    def call(self, method: str, path: str, *, failed_reports: bool = False, **kw: Any) -> Any:
        """The JSON the server answers; anything else is one line (a RagError). `failed_reports`: an upload whose
        every file failed answers its reports (printed as locally) with the first failure's status."""
        try:
            response = self.client.request(method, path, **kw)
        except httpx.TimeoutException:
            raise RagError(f"the server {self.url} did not answer within {TIMEOUT.read:.0f} s.") from None
        except httpx.HTTPError as exc:  # refused, unknown host, reset: the transport's reason
            raise RagError(f"cannot reach the server {self.url} ({exc or type(exc).__name__}); is `python -m "
                           "rag_core serve` running there?") from None
        try:
            body = response.json()
        except ValueError:
            raise RagError(f"the server {self.url} answered {response.status_code} with something other than JSON; "
                           "is it the workbench's API?") from None
        if response.is_success:
            return body
        error = body.get("error") if isinstance(body, dict) else None
        message = str((error or {}).get("message") or (body.get("message") if isinstance(body, dict) else "")
                      or "no reason given")
        data = (error or {}).get("data")
        if failed_reports and isinstance(data, dict) and "reports" in data:
            return data
        status = response.status_code
        if status == 401:
            if self.token_variable:
                raise Unauthenticated(f"the server {self.url} did not accept the token in {self.token_variable} "
                                      f"({message}).")
            raise Unauthenticated(f"the server {self.url} needs a token: set RAG_TOKEN to yours (`users create` "
                                  "on the server prints one).")
        if status == 403:
            raise Forbidden(message)
        if status == 404:
            raise NotFound(message)
        if status >= 500:
            raise RagError(f"the server {self.url} failed ({status}: {message}).")
        raise RagError(message)


# ---------------------------------------------------------------------------------------- the JSON, mapped back
def lookup_view(d: dict[str, Any]) -> Any:
    """What `search`'s printing reads of a LookupResult, from its `to_dict()` (which `to_dict` gives back)."""
    from ..records import Projected, Rewrite

    ctx = d["context"]
    blocks = [SimpleNamespace(key=b["key"], matched=tuple(b["matched"]), first=b["range"][0], last=b["range"][1],
                              section=b["section"], stopped=b["stopped"],
                              grown=b["matched_range"] is not None and b["range"] != b["matched_range"])
              for b in d["blocks"]]
    projection = SimpleNamespace(
        items=[Projected(**{**p, "matched": tuple(p["matched"])}) for p in d["projection"]],
        tokens=ctx["tokens"], tokenizer=ctx["tokenizer"],
        left_out=[(x["evidence_key"], x["reason"]) for x in d["projection_left_out"]])
    return SimpleNamespace(
        to_dict=lambda: d, warnings=tuple(d["warnings"]), rewrite=_rewrite(Rewrite, d["rewrite"]),
        candidates=[SimpleNamespace(rank=h["rank"], metadata={"location": h["location"]}) for h in d["raw_hits"]],
        traces=[SimpleNamespace(rank=h["rank"], score=h["score"], evidence_key=h["evidence_key"], status=h["status"],
                                rerank_score=h["rerank_score"], fused_rank=h["fused_rank"]) for h in d["raw_hits"]],
        evidence=[SimpleNamespace(evidence_key=c["evidence_key"], metadata={"location": c["location"]},
                                  source=c["source"], hit_reasons=tuple(c["hit_reasons"]), content=c["content"])
                  for c in d["evidence"]],
        params=SimpleNamespace(expand=SimpleNamespace(mode=ctx["expand"]),
                               budgets=SimpleNamespace(max_total_tokens=ctx["budget"])),
        projection=projection, blocks=blocks)


def explanation_view(d: dict[str, Any]) -> Any:
    """What `explain`'s printing reads of an Explanation, from its `to_dict()` (the sentences it words are there)."""
    from ..records import Rewrite
    from ..retrieval.explain import ChannelRank
    from ..retrieval.keywords import HitTerms

    def chunk(c: dict[str, Any]) -> Any:
        channels = {ch: ChannelRank(r["rank"], r["score"], r["depth"], r["score_at_depth"])
                    for ch, r in c["channels"].items()}
        terms = None if "matched_terms" not in c else HitTerms(tuple(c["matched_terms"]), c["term_scores"],
                                                              c["bm25_exact"])
        return SimpleNamespace(target=c["target"], evidence_key=c["evidence_key"], channels=channels,
                               fused_rank=c["fused_rank"], rank=c["rank"], cause=lambda _params: c["cause"],
                               terms=terms)

    a = d["answer"]
    answer = None if a is None else SimpleNamespace(
        describe=lambda _doc_id: a["summary"], spans=[SimpleNamespace(boundary=s["boundary"]) for s in a["spans"]])
    return SimpleNamespace(
        to_dict=lambda: d, verdict=d["verdict"], answer=answer, expect=SimpleNamespace(doc_id=d["doc_id"]),
        notes=tuple(d["notes"]), params=d["params"], chunks=[chunk(c) for c in d["chunks"]],
        lookup=SimpleNamespace(rewrite=_rewrite(Rewrite, d["rewrite"]), warnings=tuple(d["warnings"])))


def _rewrite(cls: Any, d: dict[str, Any] | None) -> Any:
    return None if d is None else cls(**{**d, "borrowed": tuple(d["borrowed"])})


def kb_info(d: dict[str, Any]) -> Any:
    from ..kb.manage import KnowledgeBaseInfo
    from ..records import KnowledgeBase

    recorded = {k: {**o, "value": d["settings"].get(k)} for k, o in (d.get("origins") or {}).items()
                if o.get("kind") in ("hand", "tuned")}  # the server's records: `kb show` prints the same origins
    provenance = {"origins": recorded, **({"tuning": d["tuning"]} if d.get("tuning") else {})} if recorded else {}
    kb = KnowledgeBase(d["name"], d["settings"], created_at=d["created_at"], note=d["note"], provenance=provenance)
    return KnowledgeBaseInfo(kb, d["default"], d["documents"], d["chunks"], d["without_original"], d["embedder"],
                             d["dim"], d["error"])


def report(d: dict[str, Any]) -> Any:
    from ..phrases import Phrase
    from ..records import ChangedChunk, ChunkDiff, IngestReport, IngestStatus

    diff = d["diff"]
    return IngestReport(
        d["path"], d["doc_id"], IngestStatus(d["status"]), d["chunks"], d["seconds"], d["error"], d["error_code"],
        None if diff is None else ChunkDiff(tuple(ChangedChunk(**c) for c in diff["added_chunks"]),
                                            tuple(ChangedChunk(**c) for c in diff["removed_chunks"]),
                                            diff["unchanged"], tuple(diff["conflicts"])),
        tuple(d["notes"]), tuple(Phrase(p["code"], p["params"]) for p in d["note_phrases"]))


# ---------------------------------------------------------------------------------------- the commands
def _kb_path(args: argparse.Namespace, route: str) -> str:
    """`/v1/<route>` on the server's default knowledge base, or `/v1/kbs/<--kb>/<route>`."""
    return f"/v1/kbs/{quote(args.kb, safe='')}/{route}" if args.kb else f"/v1/{route}"


def _lookup_params(args: argparse.Namespace, explaining: bool) -> list[tuple[str, str]]:
    """The lookup options given (retrieval.options), as the route's query parameters; the conversation of
    --history as its `history` parameters."""
    from ..retrieval.options import LOOKUP_OPTIONS
    from .search import read_history

    if args.as_user:
        raise RagError("--as works on the local data folder only; against a server, search with that user's token "
                       "(RAG_TOKEN).")
    params = [("query", args.query)]
    for o in LOOKUP_OPTIONS:
        value = getattr(args, o.name, None)
        if value is None or (explaining and not o.explain):
            continue
        if o.flag:  # --no-<name>: stored False
            params.append((o.surface_name, "true"))
        elif isinstance(value, list):
            params += [(o.name, str(v)) for v in value]
        else:
            params.append((o.name, str(value)))
    return params + [("history", f"{t.role}: {t.content}") for t in read_history(args.history)]


def search(args: argparse.Namespace, server: Server) -> int:
    from .search import print_lookup

    if args.queries or not args.query:
        raise RagError("search --queries works on the local data folder only; against a server give one query.")
    print_lookup(lookup_view(server.call("GET", _kb_path(args, "search"), params=_lookup_params(args, False))),
                 args.json)
    return 0


def explain(args: argparse.Namespace, server: Server) -> int:
    from .search import print_explanation

    params = _lookup_params(args, True) + [(k, v) for k, v in (("expect", args.expect), ("answer", args.answer)) if v]
    print_explanation(explanation_view(server.call("GET", _kb_path(args, "explain"), params=params)), args.json)
    return 0


def kb_list(args: argparse.Namespace, server: Server) -> int:
    from .kb import print_kbs

    print_kbs([kb_info(d) for d in server.call("GET", "/v1/kbs")], args.json)
    return 0


def docs(args: argparse.Namespace, server: Server) -> int:
    from .documents import print_documents

    print_documents(server.call("GET", _kb_path(args, "documents")), args.json)
    return 0


def ingest(args: argparse.Namespace, server: Server) -> int:
    """The files (a folder's, named relative to it, as locally) sent in one upload: the server reads and indexes
    them; its reports are printed as the local ones."""
    from ..loaders import iter_files
    from .documents import print_reports

    files = [("files", (f.name if root is None else f.relative_to(root).as_posix(), _read(f)))
             for f, root in iter_files([Path(p) for p in args.paths])]
    answer = server.call("POST", _kb_path(args, "documents"), files=files,
                         data={"folder": args.prefix, "force": str(args.force).lower()}, failed_reports=True)
    return print_reports([report(r) for r in answer["reports"]], args.json)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise RagError(f"{path}: cannot be read ({exc.strerror or exc}).") from None


COMMANDS: dict[str, Callable[[argparse.Namespace, Server], int]] = {
    "search": search, "explain": explain, "kb list": kb_list, "docs": docs, "ingest": ingest}


def run(args: argparse.Namespace, url: str) -> int:
    """The command of `args` against the server at `url`; one that only works on the local data folder is refused
    in one line naming those that work remotely."""
    name = " ".join(part for part in (args.command, getattr(args, "kb_command", None)) if part)
    command = COMMANDS.get(name)
    if command is None:
        raise RagError(f"`{name}` works on the local data folder only; with --server these work: "
                       f"{', '.join(COMMANDS)}.")
    if args.set:
        raise RagError("--set changes local settings; against a server its own settings apply (the search "
                       "options, such as --retrieve-k, are sent with the search).")
    server = Server(url)
    try:
        return command(args, server)
    finally:
        server.close()
