"""The reranker's circuit breaker (#21 item 6): a hanging rerank service costs searches their deadline only until
it has failed `rerank.circuit-failures` times in a row; then they skip it at once, with a warning (or fail at once
with on-error = fail), until one trial call after the cool-down finds it well again. The real OpenAI-compatible
adapter against the loopback /v1/rerank server, with short deadlines and an injected clock."""

from __future__ import annotations

import time

import pytest

from rag_core.errors import RetrievalError
from rag_core.records import SearchOptions
from rag_core.rerank.circuit import GuardedReranker
from rag_core.rerank.openai_compat import OpenAICompatReranker
from rag_core.retrieval import KnowledgeRetriever, RerankParams
from tests.retrieval.fakes import ScriptedPort
from tests.retrieval.test_rerank import HITS
from tests.servers import Reply
from tests.servers.rerank import OpenAIRerankServer

TIMEOUT = 0.3  # rerank.timeout: what a hanging service costs one search (no retries)
HANG = Reply.json(200, {"results": []}, delay=30)  # answers long after the deadline (the server stops it)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def server():
    yield from OpenAIRerankServer().serve()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def guarded(server, clock) -> GuardedReranker:
    adapter = OpenAICompatReranker(server.base_url, "test-rerank", "", timeout=TIMEOUT, max_retries=0)
    return GuardedReranker(adapter, failures=3, cooldown=30.0, clock=clock)


def timed_lookup(reranker, **rerank):
    started = time.monotonic()
    result = KnowledgeRetriever(ScriptedPort(HITS), reranker=reranker).lookup(
        "q", search=SearchOptions(mode="dense"), rerank=RerankParams(candidates=5, **rerank))
    return result, time.monotonic() - started


def test_a_hanging_reranker_is_skipped_after_three_timeouts_then_tried_again(server, guarded, clock) -> None:
    server.always(HANG)
    for n in range(1, 4):
        result, seconds = timed_lookup(guarded)
        assert seconds >= TIMEOUT and result.rerank.error and not result.rerank.skipped
        assert guarded.state().failures == n
    (warning,) = result.warnings
    assert warning.startswith("Reranking with openai:test-rerank failed (") and "0.3 s" in warning
    state = guarded.state()
    assert (state.state, state.failures, state.retry_in_s) == ("open", 3, 30.0)

    result, seconds = timed_lookup(guarded)  # skipped at once: no request, no deadline
    assert seconds < TIMEOUT / 3 and len(server.requests) == 3
    assert result.rerank.skipped and not result.rerank.applied and result.rerank.candidates == 0
    assert [c.fused_rank for c in result.candidates] == list(range(1, len(HITS) + 1))  # the fused order
    assert result.to_dict()["rerank"]["skipped"] is True
    (warning,) = result.warnings
    assert warning.startswith("Reranking with openai:test-rerank was skipped: it failed 3 times in a row (last: ")
    assert warning.endswith("tried again in 30 s (rerank.circuit-cooldown). The evidence is in the fused order.")
    with pytest.raises(RetrievalError, match=r"^Reranking with openai:test-rerank was skipped: it failed 3 times"):
        timed_lookup(guarded, on_error="fail")  # fails as fast
    assert len(server.requests) == 3

    clock.now += 29
    assert guarded.state().retry_in_s == 1.0 and timed_lookup(guarded)[0].rerank.skipped
    clock.now += 1  # cool-down over: one trial call; it still hangs, so the circuit opens for another 30 s
    assert guarded.state().state == "half-open"
    result, seconds = timed_lookup(guarded)
    assert seconds >= TIMEOUT and not result.rerank.skipped and len(server.requests) == 4
    assert guarded.state().state == "open" and guarded.state().retry_in_s == 30.0
    assert timed_lookup(guarded)[0].rerank.skipped and len(server.requests) == 4

    server.always(None)  # the service is back: the next trial closes the circuit
    clock.now += 30
    result, _ = timed_lookup(guarded)
    assert result.rerank.applied and not result.warnings and len(server.requests) == 5
    assert guarded.state().to_dict() == {"state": "closed", "failures": 0, "retry_in_s": 0.0, "last_error": ""}


def test_only_failures_of_the_service_count_and_a_success_resets_them(server, guarded) -> None:
    server.script(Reply.json(503, {"message": "overloaded"}), Reply.json(503, {"message": "overloaded"}))
    assert timed_lookup(guarded)[0].rerank.error and timed_lookup(guarded)[0].rerank.error
    assert guarded.state().failures == 2
    assert timed_lookup(guarded)[0].rerank.applied and guarded.state().failures == 0  # not "in a row" any more
    # A refused request (404: no such model) is an answer: the service is reachable, nothing to skip.
    server.always(Reply.json(404, {"message": "The model `test-rerank` does not exist."}))
    for _ in range(4):
        result, _ = timed_lookup(guarded)
        assert result.rerank.error and not result.rerank.skipped
    assert guarded.state().state == "closed" and guarded.state().failures == 0


def test_circuit_failures_0_never_skips(server, clock) -> None:
    adapter = OpenAICompatReranker(server.base_url, "test-rerank", "", timeout=TIMEOUT, max_retries=0)
    never = GuardedReranker(adapter, failures=0, clock=clock)
    server.always(Reply.json(502, {"message": "bad gateway"}))
    for _ in range(4):
        assert not timed_lookup(never)[0].rerank.skipped
    assert len(server.requests) == 4 and never.state().state == "closed" and never.state().failures == 4
