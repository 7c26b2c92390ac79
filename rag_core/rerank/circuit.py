"""A circuit breaker around a reranker: a service that hangs costs one search its deadline, not every search.

Without it, a rerank endpoint that stopped answering made every lookup wait `rerank.timeout` x
(`rerank.max-retries` + 1) seconds (10 s by default) before falling back to the fused order. `GuardedReranker`
counts the calls in a row that fail for want of the service (a timeout, no connection, a 5xx: `COUNTED`; a
refused request or a bad key says nothing of its health and is not counted). After `rerank.circuit-failures` of
them the circuit opens: for `rerank.circuit-cooldown` seconds every rerank is skipped at once (`RerankSkipped`,
shown as a warning of the lookup, or failing it at once with rerank.on-error = fail). Then one call is let
through (half-open): a success closes the circuit, a failure opens it for another cool-down. Calls made while the
trial runs are skipped, so a still-hanging service costs one search per cool-down.

The state is per reranker instance (one per knowledge base's workbench), shown in `/v1/health`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from ..errors import RerankError, RerankSkipped
from ..ports import Reranker
from ..records import CircuitState, RerankResult

COUNTED = frozenset({"timeout", "connection", "server"})  # RemoteError kinds that say the service is unwell


def times(n: int) -> str:
    return f"{n} time{'' if n == 1 else 's'}"


class GuardedReranker:
    """`reranker` behind a circuit breaker (see the module docstring). A Reranker itself (same `name`).
    `failures` 0 never opens the circuit."""

    def __init__(self, reranker: Reranker, *, failures: int = 3, cooldown: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.inner = reranker
        self.threshold = failures
        self.cooldown = cooldown
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None  # None: closed
        self._trial = False  # a half-open call is running
        self._last_error = ""

    @property
    def name(self) -> str:
        return self.inner.name

    def rerank(self, query: str, documents: Sequence[str]) -> RerankResult:
        trial = self._admit()
        try:
            result = self.inner.rerank(query, documents)
        except RerankError as exc:
            self._failed(exc, trial)
            raise
        except BaseException:
            self._release(trial)
            raise
        self._succeeded()
        return result

    def state(self) -> CircuitState:
        with self._lock:
            if self._opened_at is None:
                return CircuitState("closed", self._failures, 0.0, self._last_error)
            left = max(0.0, self._opened_at + self.cooldown - self._clock())
            return CircuitState("open" if left > 0 and not self._trial else "half-open", self._failures, left,
                                self._last_error)

    # ------------------------------------------------------------------------------------------
    def _admit(self) -> bool:
        """Whether this call is the half-open trial; raises RerankSkipped while the circuit is open."""
        with self._lock:
            if self._opened_at is None:
                return False
            left = self._opened_at + self.cooldown - self._clock()
            if left > 0 or self._trial:
                wait = f"tried again in {left:.0f} s" if left > 0 else "a trial call is running"
                raise RerankSkipped(f"skipped: it failed {times(self._failures)} in a row (last: {self._last_error}); "
                                    f"{wait} (rerank.circuit-cooldown)")
            self._trial = True
            return True

    def _failed(self, exc: RerankError, trial: bool) -> None:
        with self._lock:
            if trial:
                self._trial = False
            if exc.kind not in COUNTED:  # the service answered (a refused request, a bad key): it is reachable
                self._close()
                return
            self._failures += 1
            self._last_error = str(exc)[:200]
            if trial or (self.threshold and self._failures >= self.threshold):
                self._opened_at = self._clock()

    def _succeeded(self) -> None:
        with self._lock:
            self._close()

    def _release(self, trial: bool) -> None:
        if trial:
            with self._lock:
                self._trial = False

    def _close(self) -> None:
        self._failures, self._opened_at, self._trial, self._last_error = 0, None, False, ""
