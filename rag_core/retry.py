"""Retries with exponential backoff, jitter and deadlines, shared by every remote client (embedders,
chat model, rerankers, Prometheus, Loki).

Kept here rather than taken from `tenacity` or from the SDKs: the SDKs disagree (the `openai` SDK retries
with per-read timeouts and no overall bound; `dashscope` does not retry HTTP errors at all), and with
tenacity we would still write the parts that matter here: reading `Retry-After` from either SDK's
errors, shortening the last attempt to fit the overall deadline, and a loop the streamed chat can step
through itself (it shows each wait to the person as it happens). That is this module, ~100 lines.

Two bounds per call:
- `timeout`: one attempt, from connecting to the last byte (the callers enforce it as a total, not per
  socket read; see `rag_core.remote.deadline`);
- the overall deadline: `timeout * (max_retries + 1)` plus the backoff waits of a full schedule
  (0.5 s, 1 s, 2 s, ... without jitter). A retry that cannot start before it is not made, and the last
  attempt is shortened to end by it, so a slow server answering 503 with long `Retry-After` hints
  cannot stretch a call beyond it.
"""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, TypeVar

T = TypeVar("T")

OnRetry = Callable[[int, Exception, float], None]
"""Called before each wait with (retry number starting at 1, the exception, seconds about to sleep)."""

RETRYABLE_STATUS = frozenset({408, 409, 429})


def retryable_status(status: int) -> bool:
    """408/409/429 and 5xx are worth another try; other statuses will not change by waiting."""
    return status in RETRYABLE_STATUS or status >= 500


@dataclass(frozen=True)
class RetryPolicy:
    timeout: float = 30.0  # seconds per attempt, total
    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if not self.timeout > 0:
            raise ValueError("timeout must be > 0")

    @property
    def deadline(self) -> float:
        """Seconds the whole call may take, every attempt and wait included."""
        waits = sum(backoff_delay(n, self.base_delay, self.max_delay) for n in range(1, self.max_retries + 1))
        return self.timeout * (self.max_retries + 1) + waits


@dataclass
class Attempts:
    """The attempts of one call under a `RetryPolicy`: how long the next may take, and whether (and after
    how long a wait) another is worth making."""

    policy: RetryPolicy
    clock: Callable[[], float] = time.monotonic
    jitter: Callable[[], float] = random.random
    made: int = 0  # attempts started so far
    _ends: float = field(init=False)
    _waited: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        self._ends = self.clock() + self.policy.deadline

    def next_timeout(self) -> float:
        """Start an attempt: the seconds it may take (its timeout, shortened to end by the deadline)."""
        self.made += 1
        return max(0.001, min(self.policy.timeout, self._left()))

    def delay_before_retry(self, retryable: bool, hint: float | None = None) -> float | None:
        """Seconds to wait before the next attempt, or None to give up: the failure is not retryable,
        the retries are used up, or the wait would leave no time before the overall deadline."""
        if not retryable or self.made > self.policy.max_retries:
            return None
        delay = backoff_delay(self.made, self.policy.base_delay, self.policy.max_delay, self.jitter())
        if hint is not None:
            delay = max(delay, min(hint, self.policy.max_delay))
        if self._left() - delay <= 0:
            return None
        self._waited += delay  # counted even when the sleep is a test's fake one
        return delay

    def _left(self) -> float:
        return self._ends - self.clock() - self._waited


def call_with_retries(
    fn: Callable[[], T],
    *,
    retryable: Callable[[Exception], bool],
    max_retries: int,
    base_delay: float = 0.5,
    max_delay: float = 8.0,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: OnRetry | None = None,
    jitter: Callable[[], float] = random.random,
) -> T:
    """Run `fn()`; on a retryable exception wait and try again, at most `max_retries` more times.

    The wait before retry n (n = 1, 2, ...) is `base_delay * 2**(n-1)` capped at `max_delay`, shortened
    by up to 25 % at random so that many clients do not retry in lockstep. A `Retry-After` hint
    lengthens the wait (never beyond `max_delay`, so a person is not kept waiting for minutes).
    The last exception is re-raised unchanged; the caller turns it into a message. (No deadline here:
    remote clients use `Attempts` through `rag_core.remote.RemoteAdapter`, which has one.)
    """
    if max_retries < 0:
        raise ValueError("max_retries must be >= 0")
    retries = 0
    while True:
        try:
            return fn()
        except Exception as exc:
            if retries >= max_retries or not retryable(exc):
                raise
            retries += 1
            delay = backoff_delay(retries, base_delay, max_delay, jitter())
            hint = retry_after_seconds(exc)
            if hint is not None:
                delay = max(delay, min(hint, max_delay))
            if on_retry is not None:
                on_retry(retries, exc, delay)
            sleep(delay)


def backoff_delay(retry: int, base_delay: float, max_delay: float, jitter: float = 0.0) -> float:
    """Seconds to wait before retry number `retry` (1-based); `jitter` in [0, 1) trims up to 25 %."""
    delay = min(max_delay, base_delay * (2 ** (retry - 1)))
    return max(0.0, delay * (1.0 - 0.25 * jitter))


def retry_after_seconds(exc: BaseException) -> float | None:
    """The server's requested wait carried by `exc`, in seconds, or None."""
    value = getattr(exc, "retry_after", None)
    if value is not None:
        return _parse_retry_after(value)
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        headers = getattr(exc, "headers", None)
    if headers is not None:
        return retry_after_from_headers(headers)
    return None


def retry_after_from_headers(headers: Mapping[str, Any]) -> float | None:
    """Parse `retry-after-ms` or `Retry-After` (seconds or an HTTP date) from response headers."""
    lowered = {str(k).lower(): v for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        parsed = _parse_retry_after(ms)
        if parsed is not None:
            return parsed / 1000.0
    value = lowered.get("retry-after")
    return None if value is None else _parse_retry_after(value)


def _parse_retry_after(value: Any) -> float | None:
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())
