"""Retries with exponential backoff and jitter, shared by every remote client (embedders, chat model).

Kept free of any SDK: callers say which exceptions are worth another try. A server's `Retry-After`
hint is honoured when the exception carries one, either as a `retry_after` attribute (seconds) or as a
`response.headers` mapping (what httpx- and requests-based SDK errors expose).
"""

from __future__ import annotations

import email.utils
import random
import time
from typing import Any, Callable, Mapping, TypeVar

T = TypeVar("T")

OnRetry = Callable[[int, Exception, float], None]
"""Called before each wait with (retry number starting at 1, the exception, seconds about to sleep)."""


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
    The last exception is re-raised unchanged; the caller turns it into a message.
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


RETRYABLE_STATUS = frozenset({408, 409, 429})


def openai_retryable(exc: BaseException) -> bool:
    """For clients built on the `openai` SDK: timeouts, 408/409/429 and 5xx are worth another try.
    A refused connection is not: a server that is not running will not start by waiting."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in RETRYABLE_STATUS or exc.status_code >= 500
    return False
