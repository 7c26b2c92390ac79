"""`python -m rag_core serve`: the HTTP API (rag_core.service.server); FastAPI and uvicorn load only when it runs."""

from __future__ import annotations

import argparse

from ..config import Settings

MAX_WORKERS = 64


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from ..service.server import serve

    serve(settings, host=args.host or settings["api.host"], port=args.port or settings["api.port"],
          allow_no_token=args.allow_no_token, log_level=args.log_level, workers=args.workers)
    return 0


def _workers(value: str) -> int:
    try:
        count = int(value)
    except ValueError:
        count = 0
    if not 1 <= count <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of workers from 1 to {MAX_WORKERS}")
    return count


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="start the HTTP API (SuperBizAgent's /api routes and /v1)")
    p.add_argument("--host", help="address to bind (default api.host, 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default api.port, 8000)")
    p.add_argument("--allow-no-token", action="store_true",
                   help="serve a non-loopback address without RAG_API_TOKEN (only on a trusted network)")
    p.add_argument("--workers", type=_workers, default=1,
                   help="API processes on the one port, each with its own workbench (default 1; see docs/api.md)")
    p.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"),
                   help="uvicorn's log level (default: info: one line per request)")
    p.set_defaults(func=cmd_serve)
