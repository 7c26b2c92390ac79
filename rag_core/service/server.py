"""The HTTP API on uvicorn (`python -m rag_core serve`, rag_core.cli.serve), over a workbench opened like the app's.

Everything that can fail for a reason a person can fix happens before uvicorn starts, so it is one clear
line, not a traceback: a token too short, a non-loopback bind without a token, a port in use, a knowledge
base held by another process (StoreLockedError), a collection that needs migrating. The embedder is loaded
before the first request. One process serves concurrent requests: the blocking work (embedding, Milvus, the
agent) runs in threads, searches in a queue of their own (state.lookup_thread_count). `--workers N` runs N such
processes on the one socket (service.workers), through the store host for Milvus Lite; bench/api.py measures one
worker against two. uvicorn parses HTTP with httptools (a dependency): measured here, 0.6 ms less server CPU
per /v1/search than h11.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Mapping

from ..config import Settings
from ..errors import RagError

GRACEFUL_SHUTDOWN_S = 5  # open streams get this long to finish after Ctrl-C


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not the default 0: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on connections of
    # a socket that says it is TCP. With Nagle on, the body write of every answer waited for the client's
    # delayed ACK: measured +40 ms on every /v1/search (p50 63 ms over HTTP vs 20 ms in-process).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        reason = "is already in use" if exc.errno in (98, 48) else f"cannot be bound ({exc.strerror})"
        raise RagError(f"Port {port} on {host} {reason}: stop what holds it or pick another with --port.") from None
    return sock


def serve(settings: Settings, *, host: str, port: int, allow_no_token: bool = False,
          env: Mapping[str, str] | None = None, log_level: str = "info", workers: int = 1) -> None:
    """`workers` > 1: that many API processes on the socket (service.workers); 1: this process serves."""
    import uvicorn

    from ..access.checks import has_accounts
    from ..bootstrap import build_access_store, build_workbench, secret
    from .app import create_app
    from .security import check_bind, check_token

    token = secret("RAG_API_TOKEN", env)
    check_token(token)
    access = build_access_store(settings, env)
    try:
        check_bind(host, token, allow_no_token, users=has_accounts(access))
        sock = bind(host, port)
    except BaseException:
        access.close()
        raise
    if workers > 1:
        from .workers import serve_workers

        access.close()  # each worker opens its own (the same database)
        serve_workers(settings, sock, host=host, port=port, count=workers, token=token, env=env,
                      log_level=log_level, graceful_s=GRACEFUL_SHUTDOWN_S)
        return
    try:
        workbench = build_workbench(settings, env)
    except BaseException:
        sock.close()
        access.close()
        raise
    try:
        workbench.embedder.embed_query("warm-up")  # load the model now, not during the first request
        app = create_app(workbench, token=token, env=env, process_settings=settings, host=host, access=access)
    except BaseException:
        workbench.close()
        sock.close()
        access.close()
        raise
    shown = f"[{host}]" if ":" in host else host
    signs_in = "token required" if app.state.service.signs_in() else "no token"
    print(f"RAG workbench API on http://{shown}:{port} (OpenAPI: /docs; "
          f"{signs_in}; {app.state.service.agent.describe()})", file=sys.stderr)
    config = uvicorn.Config(app, log_level=log_level, lifespan="on", timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises Ctrl-C after its graceful shutdown: a normal way to stop
        print("stopped", file=sys.stderr)
    finally:
        access.close()
