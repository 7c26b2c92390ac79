"""Backoff, `Retry-After` and deadlines for every remote client (embedders, chat model, rerankers,
Prometheus, Loki); the loop that uses them is `rag_core.remote.RemoteAdapter._retrying`.

Ours rather than `tenacity` or the SDKs' own retries (decided by reading both): the SDKs disagree (the
`openai` SDK retries with per-read timeouts and no overall bound; `dashscope` does not retry HTTP errors at
all), and with tenacity we would still write the parts that matter here: reading `Retry-After` from any
SDK's errors, shortening the last attempt to fit the overall deadline, and a loop that the streamed chat
steps through itself so the person sees each wait as it happens. That is this module and one loop.

Two bounds per call:
- `timeout`: one attempt, from connecting to the last byte (enforced as a total, not per socket read;
  see `rag_core.remote.deadline`);
- the overall deadline: `timeout * (max_retries + 1)` plus the waits of the full backoff schedule
  (0.5 s, 1 s, 2 s, ... without jitter). A retry whose wait would end after it is not made, and the last
  attempt is shortened to end by it, so a slow server answering 503 with long `Retry-After` hints cannot
  stretch a call beyond it.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

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


def backoff_delay(retry: int, base_delay: float, max_delay: float, jitter: float = 0.0) -> float:
    """Seconds to wait before retry number `retry` (1-based); `jitter` in [0, 1) trims up to 25 %."""
    delay = min(max_delay, base_delay * (2 ** (retry - 1)))
    return max(0.0, delay * (1.0 - 0.25 * jitter))


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
