"""rag_core.retry: backoff, jitter, Retry-After, giving up — with a fake sleep, so no real waiting."""

from __future__ import annotations

import email.utils
import time

import pytest

from rag_core.retry import Attempts, RetryPolicy, backoff_delay, call_with_retries, retry_after_seconds


class Flaky(Exception):
    pass


class Fatal(Exception):
    pass


def flaky(failures: list[Exception], result: str = "ok"):
    calls = []

    def fn() -> str:
        calls.append(1)
        if failures:
            raise failures.pop(0)
        return result

    return fn, calls


def is_flaky(exc: Exception) -> bool:
    return isinstance(exc, Flaky)


def test_success_first_time_does_not_sleep() -> None:
    sleeps: list[float] = []
    fn, calls = flaky([])
    assert call_with_retries(fn, retryable=is_flaky, max_retries=3, sleep=sleeps.append) == "ok"
    assert (len(calls), sleeps) == (1, [])


def test_retries_with_exponential_backoff_until_success() -> None:
    sleeps: list[float] = []
    fn, calls = flaky([Flaky(), Flaky(), Flaky()])
    result = call_with_retries(fn, retryable=is_flaky, max_retries=3, base_delay=0.5, sleep=sleeps.append,
                               jitter=lambda: 0.0)
    assert result == "ok" and len(calls) == 4
    assert sleeps == [0.5, 1.0, 2.0]


def test_gives_up_after_max_retries_and_reraises_the_last_error() -> None:
    sleeps: list[float] = []
    errors = [Flaky("1"), Flaky("2"), Flaky("3")]
    fn, calls = flaky(list(errors))
    with pytest.raises(Flaky) as info:
        call_with_retries(fn, retryable=is_flaky, max_retries=2, sleep=sleeps.append)
    assert info.value is errors[2]
    assert len(calls) == 3 and len(sleeps) == 2


def test_non_retryable_error_is_raised_at_once() -> None:
    sleeps: list[float] = []
    fn, calls = flaky([Fatal()])
    with pytest.raises(Fatal):
        call_with_retries(fn, retryable=is_flaky, max_retries=5, sleep=sleeps.append)
    assert (len(calls), sleeps) == (1, [])


def test_zero_retries_means_one_attempt() -> None:
    fn, calls = flaky([Flaky()])
    with pytest.raises(Flaky):
        call_with_retries(fn, retryable=is_flaky, max_retries=0, sleep=lambda s: None)
    assert len(calls) == 1
    with pytest.raises(ValueError):
        call_with_retries(fn, retryable=is_flaky, max_retries=-1)


def test_delay_is_capped_and_jitter_trims_at_most_a_quarter() -> None:
    assert [backoff_delay(n, 1.0, 3.0) for n in range(1, 6)] == [1.0, 2.0, 3.0, 3.0, 3.0]
    sleeps: list[float] = []
    fn, _ = flaky([Flaky()] * 6)
    call_with_retries(fn, retryable=is_flaky, max_retries=6, base_delay=1.0, max_delay=3.0,
                      sleep=sleeps.append, jitter=lambda: 0.999)
    for got, full in zip(sleeps, [1.0, 2.0, 3.0, 3.0, 3.0, 3.0]):
        assert 0.75 * full <= got <= full


def test_on_retry_sees_each_retry() -> None:
    seen = []
    errors = [Flaky("a"), Flaky("b")]
    fn, _ = flaky(list(errors))
    call_with_retries(fn, retryable=is_flaky, max_retries=3, base_delay=0.1, sleep=lambda s: None,
                      jitter=lambda: 0.0, on_retry=lambda n, exc, delay: seen.append((n, exc, delay)))
    assert seen == [(1, errors[0], 0.1), (2, errors[1], 0.2)]


def test_retry_after_attribute_lengthens_the_wait_but_not_beyond_max_delay() -> None:
    slow = Flaky()
    slow.retry_after = 5  # type: ignore[attr-defined]
    huge = Flaky()
    huge.retry_after = 600  # type: ignore[attr-defined]
    sleeps: list[float] = []
    fn, _ = flaky([slow, huge])
    call_with_retries(fn, retryable=is_flaky, max_retries=2, base_delay=0.5, max_delay=8.0,
                      sleep=sleeps.append, jitter=lambda: 0.0)
    assert sleeps == [5.0, 8.0]


class _Response:
    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers


def _with_headers(headers: dict[str, str]) -> Flaky:
    exc = Flaky()
    exc.response = _Response(headers)  # type: ignore[attr-defined]
    return exc


def test_retry_after_is_read_from_response_headers() -> None:
    assert retry_after_seconds(_with_headers({"Retry-After": "2"})) == 2.0
    assert retry_after_seconds(_with_headers({"retry-after-ms": "250"})) == 0.25
    assert retry_after_seconds(_with_headers({"Retry-After": "soon"})) is None
    assert retry_after_seconds(_with_headers({})) is None
    assert retry_after_seconds(Flaky()) is None
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= retry_after_seconds(_with_headers({"Retry-After": date})) <= 31  # type: ignore[operator]
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert retry_after_seconds(_with_headers({"Retry-After": past})) == 0.0
    # a plain `headers` mapping on the exception works too (DashScope responses carry one)
    plain = Flaky()
    plain.headers = {"Retry-After": "1"}  # type: ignore[attr-defined]
    assert retry_after_seconds(plain) == 1.0


def test_a_short_retry_after_does_not_shorten_the_backoff() -> None:
    sleeps: list[float] = []
    fn, _ = flaky([_with_headers({"Retry-After": "0"})])
    call_with_retries(fn, retryable=is_flaky, max_retries=1, base_delay=0.5, sleep=sleeps.append,
                      jitter=lambda: 0.0)
    assert sleeps == [0.5]


# ------------------------------------------------------------------------- Attempts: the deadline-aware loop
class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_policy_deadline_is_every_attempt_plus_the_backoff_schedule() -> None:
    assert RetryPolicy(timeout=3, max_retries=0).deadline == 3
    assert RetryPolicy(timeout=3, max_retries=3).deadline == 12 + 0.5 + 1 + 2
    with pytest.raises(ValueError):
        RetryPolicy(timeout=0)


def test_attempts_follow_the_backoff_and_stop_after_max_retries() -> None:
    clock = FakeClock()
    attempts = Attempts(RetryPolicy(timeout=2, max_retries=2), clock, jitter=lambda: 0.0)
    assert attempts.next_timeout() == 2
    assert attempts.delay_before_retry(True) == 0.5
    assert attempts.next_timeout() == 2
    assert attempts.delay_before_retry(False) is None  # not retryable
    assert attempts.delay_before_retry(True, hint=1.5) == 1.5  # Retry-After lengthens the wait
    assert attempts.next_timeout() == 2
    assert attempts.delay_before_retry(True) is None  # retries used up
    assert attempts.made == 3


def test_a_long_retry_after_cannot_stretch_the_call_beyond_its_deadline() -> None:
    clock = FakeClock()
    attempts = Attempts(RetryPolicy(timeout=1, max_retries=3), clock, jitter=lambda: 0.0)  # deadline 7.5 s
    attempts.next_timeout()
    assert attempts.delay_before_retry(True, hint=8) is None  # 8 s would end after the deadline


def test_the_last_attempt_is_shortened_to_end_by_the_deadline() -> None:
    clock = FakeClock()
    attempts = Attempts(RetryPolicy(timeout=2, max_retries=1), clock, jitter=lambda: 0.0)  # deadline 4.5 s
    attempts.next_timeout()
    clock.now += 2.0  # the first attempt used its whole timeout
    assert attempts.delay_before_retry(True, hint=2.0) == 2.0  # waits count even when the sleep is fake
    assert attempts.next_timeout() == pytest.approx(0.5)
