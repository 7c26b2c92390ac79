"""`RemoteAdapter`: what every remote client shares, written once (as in simonw/llm): deadlines, retries
with backoff, the translation of any failure into one message, and the secret kept out of all of it.

A provider subclass implements its one small abstract method (`_request_batch`, `_score_batch`, ...) as a
single plain request that raises whatever its SDK raises (or `HTTPFailure` / `MalformedReply`); it calls
it through `self._call(...)` and gets the answer or the subsystem's error with one clear message.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from .. import tracing
from ..retry import Attempts, RetryPolicy
from .deadline import run_within
from .failures import Failure, classify
from .messages import Endpoint, explain

log = logging.getLogger(__name__)

T = TypeVar("T")
Y = TypeVar("Y")


@dataclass(frozen=True)
class Retrying:
    """A notice: the call failed in a way worth another try; waiting `delay` seconds before retry `retry`."""

    retry: int
    max_retries: int
    delay: float
    reason: str


class RemoteAdapter:
    """Base of the remote clients. `endpoint` says who is called (for messages); `secret` (the API key or
    token) is blanked out of anything shown or logged and never appears in `repr`."""

    _span_kind = tracing.semconv.CHAIN  # of each request's span; an embedder's or reranker's says so

    def __init__(self, endpoint: Endpoint, *, timeout: float, max_retries: int, secret: str = "",
                 sleep: Callable[[float], None] = time.sleep, jitter: Callable[[], float] = random.random,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not timeout > 0 or max_retries < 0:
            raise endpoint.error(f"{endpoint.settings}.timeout must be positive and {endpoint.settings}.max-retries "
                                 f"at least 0 (got {timeout} and {max_retries}).", "config")
        self.endpoint = endpoint
        self.policy = RetryPolicy(timeout=timeout, max_retries=max_retries)
        self._secret = secret or ""
        self._sleep = sleep
        self._jitter = jitter
        self._clock = clock

    def _call(self, request: Callable[[], T]) -> T:
        """`request()` within the attempt's deadline, retried as the policy allows; its answer, or the
        endpoint's error. Exceptions that are not remote failures (bugs) pass through unchanged."""
        def traced() -> T:  # runs in the worker thread, in the caller's trace (deadline._start)
            with tracing.span(f"{self.endpoint.settings}.request", self._span_kind,
                              {"rag.endpoint": self.endpoint.subject}):
                return request()

        def attempt(seconds: float) -> Generator[Any, None, T]:
            return run_within(traced, seconds)
            yield  # pragma: no cover - makes this a generator

        calls = self._retrying(attempt)
        try:
            while True:
                next(calls)  # Retrying notices: logged already, nobody to show them to
        except StopIteration as stop:
            return stop.value

    def _retrying(self, attempt: Callable[[float], Generator[Y, None, T]], *,
                  may_retry: Callable[[], bool] = lambda: True,
                  explain: Callable[[Failure, int], Exception] | None = None) -> Generator[Y | Retrying, None, T]:
        """Run `attempt(seconds)` (a generator: a streamed call yields as it reads) until it returns,
        yielding a `Retrying` notice before each wait. `may_retry()` False forbids retrying the failure
        at hand (a streamed answer already shown in part); `explain` replaces `_explain` for this call."""
        attempts = Attempts(self.policy, self._clock, self._jitter)
        while True:
            try:
                return (yield from attempt(attempts.next_timeout()))
            except Exception as exc:
                failure = self._classify(exc)
                if failure is None:
                    raise
                delay = attempts.delay_before_retry(failure.retryable and may_retry(), failure.retry_after)
                if delay is None:
                    raise (explain or self._explain)(failure, attempts.made) from None
                reason = self._reason(failure)
                log.warning("%s: %s; retry %d/%d in %.1f s", self.endpoint.subject, reason, attempts.made,
                            self.policy.max_retries, delay)
                yield Retrying(attempts.made, self.policy.max_retries, delay, reason)
                self._sleep(delay)

    # ------------------------------------------------------------------------------ for subclasses
    def _classify(self, exc: BaseException) -> Failure | None:
        failure = classify(exc)
        return None if failure is None else failure.redacted(self._secret)

    def _explain(self, failure: Failure, tries: int) -> Exception:
        return explain(failure, self.endpoint, tries, self.policy.timeout)

    def _reason(self, failure: Failure) -> str:
        if failure.kind == "timeout":
            return f"no answer within {self.policy.timeout:g} s"
        return failure.summary()
