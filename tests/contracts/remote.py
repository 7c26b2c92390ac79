"""How every remote client behaves when its service misbehaves, run through the loopback servers.

A test class subclasses `RemoteFailuresContract` and provides three fixtures:

- `server`: the running fake service (a `tests.servers.FakeServer`) the client talks to;
- `make`: `make(url=None, *, timeout, max_retries, sleep)` -> a client pointed at `server` (or `url`);
- `call`: `call(client)` -> does one representative call (embed a query, rerank, read alerts, ...).

and the class attribute `error` (the subsystem's error class). The failures are the same whatever the
protocol: a 429 (retried, honouring Retry-After), 5xx every time, a hang, a server that drips bytes,
an HTML page with status 200, a refused connection. Each ends in one clear line with a `kind`, within
the deadline.
"""

from __future__ import annotations

import time

import pytest

from rag_core.errors import RemoteError
from tests.servers import FakeServer, Reply


def one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text and "Traceback" not in text and text.endswith("."), text
    return text


class RemoteFailuresContract:
    error: type[RemoteError] = RemoteError

    @pytest.fixture
    def sleeps(self) -> list[float]:
        return []

    def test_a_rate_limit_is_retried_after_the_servers_hint(self, server: FakeServer, make, call, sleeps) -> None:
        server.script(Reply.json(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "1.5"}))
        call(make(timeout=5, max_retries=2, sleep=sleeps.append))
        assert sleeps == [1.5] and len(server.requests) == 2

    def test_a_server_error_every_time_ends_after_the_retries(self, server, make, call, sleeps) -> None:
        server.always(Reply.json(503, {"error": {"message": "overloaded"}}))
        with pytest.raises(self.error) as info:
            call(make(timeout=5, max_retries=2, sleep=sleeps.append))
        assert info.value.kind == "server" and len(server.requests) == 3 and len(sleeps) == 2
        assert "kept failing (HTTP 503) after 3 attempts" in one_line(info.value)

    def test_a_hung_server_is_cut_off_at_the_timeout(self, server, make, call, sleeps) -> None:
        server.always(Reply.json(200, {}, delay=10))
        started = time.monotonic()
        with pytest.raises(self.error) as info:
            call(make(timeout=0.4, max_retries=0, sleep=sleeps.append))
        assert info.value.kind == "timeout" and time.monotonic() - started < 2.5
        assert "did not answer within 0.4 s (1 attempt)" in one_line(info.value)

    def test_a_server_that_drips_bytes_is_cut_off_at_the_timeout(self, server, make, call, sleeps) -> None:
        # A valid answer, one byte every 0.1 s: no socket read ever waits long, the attempt does.
        server.always(lambda request: Reply.drip(server.handle(request), every=0.1))
        started = time.monotonic()
        with pytest.raises(self.error) as info:
            call(make(timeout=0.4, max_retries=0, sleep=sleeps.append))
        assert info.value.kind == "timeout" and time.monotonic() - started < 2.5
        one_line(info.value)

    def test_an_html_page_with_status_200_is_named_and_not_retried(self, server, make, call, sleeps) -> None:
        server.always(Reply(200, b"<html><body>Please log in</body></html>", {"Content-Type": "text/html"}))
        with pytest.raises(self.error) as info:
            call(make(timeout=5, max_retries=2, sleep=sleeps.append))
        assert info.value.kind == "malformed" and len(server.requests) == 1 and sleeps == []
        assert "HTML page" in one_line(info.value) and server.url.split("//")[1] in str(info.value)

    def test_a_refused_connection_is_reported_at_once(self, make, call, sleeps) -> None:
        with FakeServer() as gone:
            url = gone.url
        with pytest.raises(self.error) as info:
            call(make(url, timeout=5, max_retries=2, sleep=sleeps.append))
        assert info.value.kind == "connection" and sleeps == []
        assert "did not answer (connection refused)" in one_line(info.value)

