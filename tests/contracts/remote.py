"""How every remote client behaves when its service misbehaves, run through the loopback servers.

A test class subclasses `RemoteFailuresContract` and provides three fixtures:

- `server`: the running fake service (a `tests.servers.FakeServer`) the client talks to;
- `make`: `make(url=None, *, timeout, max_retries, sleep)` -> a client pointed at `server` (or `url`);
- `call`: `call(client)` -> does one representative call (embed a query, rerank, read alerts, ...).

and the class attribute `error` (the subsystem's error class). The failures are the same whatever the
protocol: a 429 (retried, honouring Retry-After), 5xx every time, a hang, a server that drips bytes,
an HTML page with status 200, a refused connection. Each ends in one clear line with a `kind`, within
the deadline.

Only the tests of a deadline give the client a short timeout, and their server takes far longer than it (a hang
of 30 s, a drip of seconds), so the outcome says whether the deadline held; none asserts how long it took. The
others give it `GENEROUS`: a loaded machine must not turn a slow answer into a timeout.
"""

from __future__ import annotations

import pytest

from rag_core.errors import RemoteError
from tests.helpers import wait_until
from tests.servers import FakeServer, Reply


def one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text and "Traceback" not in text and text.endswith("."), text
    return text


GENEROUS = 30.0  # the timeout of the calls that are not about a deadline
HANG = 30.0  # what a hung server waits before answering (the server's stop ends it)
# The timeout of a call that must time out once and then succeed: the test waits it out once, and the next attempt
# must fit in it. An SDK's first call in a process took 5 s on 2 cores under `stress --cpu 4` (its imports), so such
# a test warms the SDK up first; then a call with a new client took 0.5 s at most there.
ONCE = 3.0


def arrived(server: FakeServer, count: int) -> bool:
    """Whether `count` requests reached `server`, exactly. A request whose attempt ran out of time before it was sent
    (a loaded machine can take that long to build an SDK's client) is still sent, by the abandoned worker: wait."""
    return wait_until(lambda: len(server.requests) >= count, GENEROUS) and len(server.requests) == count


def frozen_clock() -> float:
    """A clock that stands still, for a client whose retries a test counts: its overall deadline then counts only
    the (faked) waits, so whether one more attempt fits does not depend on how fast a loaded machine ran the others.
    The arithmetic of the overall deadline itself is tested with a fake clock in tests/remote/test_retry.py."""
    return 0.0


class RemoteFailuresContract:
    error: type[RemoteError] = RemoteError

    @pytest.fixture
    def sleeps(self) -> list[float]:
        return []

    def test_a_rate_limit_is_retried_after_the_servers_hint(self, server: FakeServer, make, call, sleeps) -> None:
        server.script(Reply.json(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "1.5"}))
        call(make(timeout=GENEROUS, max_retries=2, sleep=sleeps.append))
        assert sleeps == [1.5] and len(server.requests) == 2

    def test_a_server_error_every_time_ends_after_the_retries(self, server, make, call, sleeps) -> None:
        server.always(Reply.json(503, {"error": {"message": "overloaded"}}))
        with pytest.raises(self.error) as info:
            call(make(timeout=GENEROUS, max_retries=2, sleep=sleeps.append))
        assert info.value.kind == "server" and len(server.requests) == 3 and len(sleeps) == 2
        assert "kept failing (HTTP 503) after 3 attempts" in one_line(info.value)

    def test_a_hung_server_is_cut_off_at_the_timeout(self, server, make, call, sleeps) -> None:
        server.always(Reply.json(200, {}, delay=HANG))
        with pytest.raises(self.error) as info:
            call(make(timeout=0.4, max_retries=0, sleep=sleeps.append))
        assert info.value.kind == "timeout" and arrived(server, 1)
        assert "did not answer within 0.4 s (1 attempt)" in one_line(info.value)

    def test_a_server_that_drips_bytes_is_cut_off_at_the_timeout(self, server, make, call, sleeps) -> None:
        # A valid answer, one byte every 0.1 s: no socket read ever waits long, the attempt does.
        server.always(lambda request: Reply.drip(server.handle(request), every=0.1))
        with pytest.raises(self.error) as info:
            call(make(timeout=0.4, max_retries=0, sleep=sleeps.append))
        assert info.value.kind == "timeout" and arrived(server, 1)
        one_line(info.value)

    def test_an_html_page_with_status_200_is_named_and_not_retried(self, server, make, call, sleeps) -> None:
        server.always(Reply(200, b"<html><body>Please log in</body></html>", {"Content-Type": "text/html"}))
        with pytest.raises(self.error) as info:
            call(make(timeout=GENEROUS, max_retries=2, sleep=sleeps.append))
        assert info.value.kind == "malformed" and len(server.requests) == 1 and sleeps == []
        assert "HTML page" in one_line(info.value) and server.url.split("//")[1] in str(info.value)

    def test_a_refused_connection_is_reported_at_once(self, make, call, sleeps) -> None:
        with FakeServer() as gone:
            url = gone.url
        with pytest.raises(self.error) as info:
            call(make(url, timeout=GENEROUS, max_retries=2, sleep=sleeps.append))
        assert info.value.kind == "connection" and sleeps == []
        assert "did not answer (connection refused)" in one_line(info.value)

