"""What the running service holds: the default knowledge base's workbench and agent, every other knowledge base
(opened on first use), the chat sessions, and the limits on what runs at once. One `Service` per app
(`app.state.service`); routes get it through `deps.ServiceDep`."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from ..access.checks import has_accounts
from .sessions import Sessions

if TYPE_CHECKING:
    from ..agent import Agent
    from ..bootstrap import Workbench
    from ..config import Settings
    from ..feedback import TurnStore
    from ..kb.manage import KnowledgeBases
    from ..kb.pool import OpenKnowledgeBases
    from ..ports import AccessStore

STREAM_THREADS = 100  # streamed turns at once, each mostly waiting for its model
CHAT_TURNS = 100  # the default of api.chat-turns


@dataclass
class Streams:
    """How many streamed turns are running (health shows it; a test waits for a stopped turn with it)."""

    active: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def opened(self) -> None:
        with self._lock:
            self.active += 1

    def closed(self) -> None:
        with self._lock:
            self.active -= 1


@dataclass
class Capacity:
    """At most `limit` of something at once, refused beyond it (never queued): the chat turns of /api/chat."""

    limit: int
    active: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def enter(self) -> bool:
        with self._lock:
            if self.active >= self.limit:
                return False
            self.active += 1
            return True

    def leave(self) -> None:
        with self._lock:
            self.active -= 1


@dataclass
class Service:
    workbench: Workbench  # the default knowledge base's
    agent: Agent
    sessions: Sessions  # in this process, or shared by the workers (sessions.py)
    auth: bool
    env: Mapping[str, str] | None = None  # where secrets are read (None: the process environment)
    streams: Streams = field(default_factory=Streams)
    # Streamed turns run their steps in threads of their own (see streaming.sse), not in the default pool that
    # searches, uploads and health checks use.
    stream_threads: anyio.CapacityLimiter = field(default_factory=lambda: anyio.CapacityLimiter(STREAM_THREADS))
    kbs: OpenKnowledgeBases | None = None  # every knowledge base, opened on first use (/v1/kbs/{name}/...)
    _agents: dict[str, tuple[Workbench, Agent]] = field(default_factory=dict)  # by knowledge base, with its workbench
    _agents_lock: threading.Lock = field(default_factory=threading.Lock)
    # /v1/search lookups: at most `api.lookup-threads` at once, the others queue first come first served (see
    # lookup_thread_count).
    lookup_threads: anyio.CapacityLimiter = field(
        default_factory=lambda: anyio.CapacityLimiter(lookup_thread_count(None)))
    # /api/chat turns: at most `api.chat-turns` at once (503 beyond), their steps in threads of their own, one
    # per turn: a turn waits for its model for seconds, and in the default pool 40 of them held every thread
    # that health checks, documents and uploads need.
    chat_turns: Capacity = field(default_factory=lambda: Capacity(CHAT_TURNS))
    chat_threads: anyio.CapacityLimiter = field(default_factory=lambda: anyio.CapacityLimiter(CHAT_TURNS))
    turns: TurnStore | None = None  # the recorded chat turns and their ratings (/api/feedback)
    access: AccessStore | None = None  # users, roles and the audit log (security.Authenticate, deps.Needs)

    @property
    def kb_manager(self) -> KnowledgeBases:
        """Create, list, copy and delete knowledge bases (app.create_app always opens them)."""
        if self.kbs is None:
            raise RuntimeError("this service was built without its knowledge bases")
        return self.kbs.manager

    def workbench_of(self, kb: str | None) -> Workbench:
        """The workbench of knowledge base `kb` (None or "": the default one). Raises KnowledgeBaseError."""
        if not kb or kb == self.workbench.settings.kb_name or self.kbs is None:
            if self.default_upgraded():
                self.reopen_default()
            return self.workbench
        return self.kbs.get(kb)

    def default_upgraded(self) -> bool:
        """Whether an embedder upgrade (kb.upgrade, a process of its own) swapped the default knowledge base's
        vectors since it was opened: the collection it searches is gone (`reopen_default`, blocking). Cheap: a stat.
        The pool may have opened it again already (MCP over HTTP asks the pool)."""
        return self.kbs is not None and (self.kbs.first is not self.workbench or self.kbs.first_upgraded())

    def reopen_default(self) -> None:
        """The default knowledge base opened again with its new embedder (or as the pool did), its agent made again."""
        from ..bootstrap import build_agent

        if self.kbs is None:
            return
        with self._agents_lock:
            self.workbench = self.kbs.first if self.kbs.first is not self.workbench else self.kbs.reopen_first()
            self.agent = build_agent(self.workbench, self.env)

    def agent_of(self, kb: str | None) -> Agent:
        """The agent searching knowledge base `kb` (None or "": the default one's agent)."""
        from ..bootstrap import build_agent

        wb = self.workbench_of(kb)
        if wb is self.workbench:
            return self.agent
        with self._agents_lock:
            name = wb.settings.kb_name
            if name not in self._agents or self._agents[name][0] is not wb:  # opened again (an upgrade swapped)
                self._agents[name] = (wb, build_agent(wb, self.env))
            return self._agents[name][1]

    def signs_in(self) -> bool:
        """Whether callers must sign in: RAG_API_TOKEN is set or the access store has users (revoked ones too)."""
        return self.auth or (self.access is not None and has_accounts(self.access))

    def forget(self, kb: str) -> None:
        """Close knowledge base `kb` (deleted, or its settings changed: it is opened again when next used)."""
        with self._agents_lock:
            self._agents.pop(kb, None)
        if self.kbs is not None and kb != self.workbench.settings.kb_name:
            self.kbs.forget(kb)


def lookup_thread_count(settings: Settings | None) -> int:
    """How many /v1/search lookups run at once (`api.lookup-threads`; 0 = four times the cores). A lookup is CPU in
    this process (under one interpreter lock) and in Milvus Lite's: with every request in its own thread, many
    clients share the cores all at once and each finishes late; queued in one place, the earlier ones finish
    first. Lookups running together share their Milvus requests (store.milvus.coalesce), so a few more than the cores
    pay: bench/api.py compares four times with twice the cores (the default before)."""
    configured = settings["api.lookup-threads"] if settings is not None else 0
    return configured or 4 * (os.cpu_count() or 1)
