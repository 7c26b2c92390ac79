"""`serve --workers N`: N API processes on one listening socket, each with its own workbench.

Why: an API process runs its Python on one core at a time (one interpreter lock), so one process cannot keep two
cores busy with lookups (bench/api.py measures one worker against two). The parent binds the socket once and
checks everything a person can fix before any worker starts (the token, the bind, the port, the knowledge base
opening, the embedder loading: `check`), as one line; then it starts the workers with `spawn` (a fresh
interpreter each: no forked threads, locks or gRPC channels), hands each the socket, and waits until every one
answers before it says where the API is. The kernel gives each new connection to one of them.

Chat sessions are kept in the shared state's database (sessions.SharedSessionStore), so a session's next turn
may reach any worker. Milvus Lite: the workers go through the store host whatever `milvus.lite-mode` says (one
process can open a Lite file: the host is that process); a Milvus server is reached by each worker directly.
What the workers share and what each keeps for itself is in docs/api.md ("Several workers").

Ctrl-C or SIGTERM stops every worker the way one `serve` stops (open streams get GRACEFUL_SHUTDOWN_S), then the
parent. A worker that dies is started again, said on stderr; one that cannot start (after it started once, or
a replacement RESTART_TRIES times in a row) stops them all with its reason.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.connection import wait
from multiprocessing.context import SpawnProcess
from multiprocessing.synchronize import Event
from typing import Any

from ..config import Settings
from ..errors import RagError
from .sessions import SharedSessionStore
from .state import Capacity

STARTUP_FAILED = 3  # a worker's exit code when it could not open its workbench (its reason is on stderr)
RESTART_TRIES = 3  # replacements in a row that may fail to start before the server gives up
RESTART_PAUSE_S = 1.0  # between a replacement that failed to start and the next
STOP_WAIT_S = 30.0  # after the graceful shutdown: the workers still running then are killed
BACKLOG = 2048  # uvicorn's default
WORKER_HEADER = "X-Worker"  # every answer of a worker names it (its pid): which worker answered

_spawn = multiprocessing.get_context("spawn")


@dataclass(frozen=True)
class Plan:
    """What every worker is given (pickled to it): the settings, where secrets are read, the bind, the token."""

    settings: Settings
    env: Mapping[str, str] | None
    host: str
    token: str
    log_level: str
    graceful_s: int  # open streams get this long to finish on SIGTERM or Ctrl-C


def worker_settings(settings: Settings) -> Settings:
    """The settings a worker opens its workbench with: a Milvus Lite file through the store host, so that
    every worker (and the app, the CLI) can use it at once."""
    from ..store.lite.connection import is_lite

    if is_lite(settings.milvus_uri) and settings["milvus.lite-mode"] != "shared":
        return settings.with_overrides({"milvus.lite-mode": "shared"}, "serve --workers")
    return settings


def shared_sessions(plan: Plan, settings: Settings) -> SharedSessionStore:
    """The chat sessions every worker reads and writes: the shared state's database (rag_core.db: the data
    folder's SQLite file, or PostgreSQL by database.url). StoreError, one line, when it cannot be used."""
    from ..db.engine import engine
    from ..db.url import database_url

    return SharedSessionStore(engine(database_url(plan.settings, plan.env)), settings["api.max-sessions"],
                              settings["chat.history-pairs"])


def check(plan: Plan) -> tuple[str, bool]:
    """Open the workbench and the app once in this process, as a worker will, and close them: a failure a person
    can fix (a locked or damaged knowledge base, an embedder that does not load, ...) is raised here, before any
    worker starts. Returns the agent's description and whether callers sign in, for the start-up line."""
    from ..bootstrap import build_workbench
    from .app import create_app

    workbench = build_workbench(plan.settings, plan.env)
    try:
        workbench.embedder.embed_query("warm-up")
        sessions = shared_sessions(plan, workbench.settings)
        sessions.close()
        app = create_app(workbench, token=plan.token, env=plan.env, process_settings=plan.settings, host=plan.host)
    except BaseException:
        workbench.close()
        raise
    service = app.state.service
    described: str = service.agent.describe()
    signs_in = service.signs_in()
    if service.access is not None:
        service.access.close()  # the app's own (its lifespan never ran)
    if service.kbs is not None:
        service.kbs.close_all()  # the workbench too (the app owns it)
    else:
        workbench.close()
    return described, signs_in


class WorkerHeader:
    """ASGI middleware: `X-Worker: <pid>` on every HTTP answer (a test or a person can tell the workers apart)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.value = str(os.getpid()).encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_named(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()),
                                                  (WORKER_HEADER.lower().encode(), self.value)]}
            await send(message)

        await self.app(scope, receive, send_named)


class SharedCapacity(Capacity):
    """`api.chat-turns` counted over every worker, so a turn is refused (503) when that many run on the whole
    server, whichever worker it reaches. Each worker counts its own turns in its slot of a shared array: the
    supervisor empties a dead worker's slot, so its turns that never ended do not hold the limit for ever."""

    def __init__(self, limit: int, counts: Any, slot: int) -> None:
        super().__init__(limit)
        self.counts, self.slot = counts, slot

    def enter(self) -> bool:
        with self.counts.get_lock():
            if sum(self.counts) >= self.limit:
                return False
            self.counts[self.slot] += 1
            return True

    def leave(self) -> None:
        with self.counts.get_lock():
            self.counts[self.slot] -= 1


def run_worker(plan: Plan, sock: socket.socket, index: int, ready: Event, turns: Any) -> None:
    """A worker's process: its own workbench and app on the shared socket, until SIGTERM or Ctrl-C."""
    import uvicorn

    from ..bootstrap import build_workbench
    from .app import create_app

    try:
        workbench = build_workbench(plan.settings, plan.env)
        try:
            workbench.embedder.embed_query("warm-up")
            app = create_app(workbench, token=plan.token, env=plan.env, process_settings=plan.settings,
                             host=plan.host, sessions=shared_sessions(plan, workbench.settings),
                             chat_turns=SharedCapacity(workbench.settings["api.chat-turns"], turns, index - 1))
        except BaseException:
            workbench.close()
            raise
    except RagError as exc:
        print(f"worker {index} (pid {os.getpid()}) did not start: {exc}", file=sys.stderr, flush=True)
        sys.exit(STARTUP_FAILED)
    except KeyboardInterrupt:
        sys.exit(0)
    app.add_middleware(WorkerHeader)

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                ready.set()

    config = uvicorn.Config(app, log_level=plan.log_level, lifespan="on", timeout_graceful_shutdown=plan.graceful_s)
    try:
        Server(config).run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises Ctrl-C after its graceful shutdown
        pass


@dataclass(frozen=True)
class Worker:
    index: int
    process: SpawnProcess
    ready: Event

    @property
    def pid(self) -> int:
        return self.process.pid or 0


def _start(plan: Plan, sock: socket.socket, index: int, turns: Any) -> Worker:
    ready = _spawn.Event()
    process = _spawn.Process(target=run_worker, args=(plan, sock, index, ready, turns), name=f"rag-worker-{index}",
                             daemon=False)
    process.start()
    return Worker(index, process, ready)


def _ended(process: SpawnProcess) -> str:
    code = process.exitcode
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class Supervisor:
    """The parent: starts the workers, starts a dead one again, stops them all on SIGTERM or Ctrl-C."""

    def __init__(self, plan: Plan, sock: socket.socket, count: int) -> None:
        self.plan, self.sock, self.count = plan, sock, count
        self.workers: list[Worker] = []
        self.stopping: list[str] = []
        self.turns = _spawn.Array("i", count)  # chat turns running, a slot per worker (SharedCapacity)

    def _on_signal(self, signum: int, _frame: Any) -> None:
        self.stopping.append(signal.Signals(signum).name)

    def run(self, on_ready: Any = None) -> None:
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.workers = [_start(self.plan, self.sock, i, self.turns) for i in range(1, self.count + 1)]
            self._wait_ready(self.workers, first=True)
            if not self.stopping and on_ready is not None:
                on_ready([w.pid for w in self.workers])
            self._keep_alive()
        finally:
            self._stop_all()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _wait_ready(self, workers: list[Worker], *, first: bool) -> bool:
        """Until every one of `workers` serves (True), or one exits first (False; raised on the first start)."""
        waiting = list(workers)
        while waiting and not self.stopping:
            for w in list(waiting):
                if w.ready.is_set():
                    waiting.remove(w)
                elif not w.process.is_alive():
                    w.process.join()
                    if first:
                        raise RagError(f"API worker {w.index} stopped while starting ({_ended(w.process)}): "
                                       "its message is above.")
                    return False
            if waiting:
                wait([w.process.sentinel for w in waiting], timeout=0.2)
        return True

    def _keep_alive(self) -> None:
        while not self.stopping:
            wait([w.process.sentinel for w in self.workers], timeout=0.5)
            for slot, w in enumerate(self.workers):
                if self.stopping or w.process.is_alive():
                    continue
                w.process.join()
                print(f"API worker {w.index} (pid {w.pid}) died ({_ended(w.process)}): starting another",
                      file=sys.stderr, flush=True)
                with self.turns.get_lock():
                    self.turns[slot] = 0  # its turns ended with it
                self.workers[slot] = self._replace(w)

    def _replace(self, dead: Worker) -> Worker:
        for attempt in range(1, RESTART_TRIES + 1):
            worker = _start(self.plan, self.sock, dead.index, self.turns)
            if self._wait_ready([worker], first=False) or self.stopping:
                if not self.stopping:
                    print(f"API worker {dead.index} serves again (pid {worker.pid})", file=sys.stderr, flush=True)
                return worker
            if attempt < RESTART_TRIES:
                time.sleep(RESTART_PAUSE_S)
        raise RagError(f"API worker {dead.index} could not be started again ({RESTART_TRIES} tries, last "
                       f"{_ended(worker.process)}): its message is above; the API stopped.")

    def _stop_all(self) -> None:
        running = [w for w in self.workers if w.process.is_alive()]
        for w in running:
            try:
                os.kill(w.pid, signal.SIGTERM)  # each stops as one `serve` does on Ctrl-C
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + self.plan.graceful_s + STOP_WAIT_S
        for w in running:
            w.process.join(max(0.0, deadline - time.monotonic()))
            if w.process.is_alive():
                print(f"API worker {w.index} (pid {w.pid}) did not stop: killed", file=sys.stderr, flush=True)
                w.process.kill()
                w.process.join()


def serve_workers(settings: Settings, sock: socket.socket, *, host: str, port: int, count: int, token: str,
                  env: Mapping[str, str] | None, log_level: str, graceful_s: int) -> None:
    """`serve --workers N` (N > 1) on `sock` (bound by server.serve after it checked the token and the address;
    closed here)."""
    plan = Plan(worker_settings(settings), dict(env) if env is not None else None, host, token, log_level, graceful_s)
    try:
        sock.listen(BACKLOG)  # connections wait here while a worker starts (or starts again)
        described, signs_in = check(plan)
        shown = f"[{host}]" if ":" in host else host

        def say_ready(pids: list[int]) -> None:
            print(f"RAG workbench API on http://{shown}:{port} (OpenAPI: /docs; "
                  f"{'token required' if signs_in else 'no token'}; {described}; {count} workers, pids "
                  f"{', '.join(map(str, pids))})", file=sys.stderr, flush=True)

        Supervisor(plan, sock, count).run(say_ready)
        print("stopped", file=sys.stderr)
    finally:
        sock.close()
