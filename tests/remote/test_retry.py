"""rag_core.retry: backoff, jitter, Retry-After, and the deadline-aware attempts of one call (fake clock,
so no real waiting)."""

from __future__ import annotations

import email.utils
import time

import pytest

from rag_core.retry import Attempts, RetryPolicy, backoff_delay, retry_after_from_headers


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_delay_doubles_is_capped_and_jitter_trims_at_most_a_quarter() -> None:
    assert [backoff_delay(n, 1.0, 3.0) for n in range(1, 6)] == [1.0, 2.0, 3.0, 3.0, 3.0]
    assert backoff_delay(2, 0.5, 8.0, jitter=0.999) == pytest.approx(0.75, abs=0.001)
    assert backoff_delay(1, 0.5, 8.0, jitter=0.0) == 0.5


def test_retry_after_headers() -> None:
    assert retry_after_from_headers({"Retry-After": "2"}) == 2.0
    assert retry_after_from_headers({"retry-after-ms": "250"}) == 0.25
    assert retry_after_from_headers({"Retry-After": "soon"}) is None
    assert retry_after_from_headers({}) is None
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= retry_after_from_headers({"Retry-After": date}) <= 31  # type: ignore[operator]
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert retry_after_from_headers({"Retry-After": past}) == 0.0


def test_policy_deadline_is_every_attempt_plus_the_backoff_schedule() -> None:
    assert RetryPolicy(timeout=3, max_retries=0).deadline == 3
    assert RetryPolicy(timeout=3, max_retries=3).deadline == 12 + 0.5 + 1 + 2
    with pytest.raises(ValueError):
        RetryPolicy(timeout=0)
    with pytest.raises(ValueError):
        RetryPolicy(max_retries=-1)


def test_attempts_follow_the_backoff_and_stop_after_max_retries() -> None:
    attempts = Attempts(RetryPolicy(timeout=2, max_retries=2), FakeClock(), jitter=lambda: 0.0)
    assert attempts.next_timeout() == 2
    assert attempts.delay_before_retry(True) == 0.5
    assert attempts.next_timeout() == 2
    assert attempts.delay_before_retry(False) is None  # not retryable
    assert attempts.delay_before_retry(True, hint=1.5) == 1.5  # Retry-After lengthens the wait...
    assert attempts.next_timeout() == 2
    assert attempts.delay_before_retry(True) is None  # retries used up
    assert attempts.made == 3


def test_a_short_retry_after_does_not_shorten_the_backoff_and_a_long_one_is_capped() -> None:
    attempts = Attempts(RetryPolicy(timeout=30, max_retries=3), FakeClock(), jitter=lambda: 0.0)
    attempts.next_timeout()
    assert attempts.delay_before_retry(True, hint=0.0) == 0.5
    attempts.next_timeout()
    assert attempts.delay_before_retry(True, hint=600) == 8.0  # max_delay: nobody waits minutes


def test_a_long_retry_after_cannot_stretch_the_call_beyond_its_deadline() -> None:
    attempts = Attempts(RetryPolicy(timeout=1, max_retries=3), FakeClock(), jitter=lambda: 0.0)  # deadline 7.5 s
    attempts.next_timeout()
    assert attempts.delay_before_retry(True, hint=8) is None  # 8 s would end after the deadline


def test_the_last_attempt_is_shortened_to_end_by_the_deadline() -> None:
    clock = FakeClock()
    attempts = Attempts(RetryPolicy(timeout=2, max_retries=1), clock, jitter=lambda: 0.0)  # deadline 4.5 s
    attempts.next_timeout()
    clock.now += 2.0  # the first attempt used its whole timeout
    assert attempts.delay_before_retry(True, hint=2.0) == 2.0  # waits count even when the sleep is fake
    assert attempts.next_timeout() == pytest.approx(0.5)
