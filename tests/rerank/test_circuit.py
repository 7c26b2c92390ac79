"""The reranker's circuit breaker (#21 item 6): a hanging rerank service costs searches their deadline only until
it has failed `rerank.circuit-failures` times in a row; then they skip it at once, with a warning (or fail at once
with on-error = fail), until one trial call after the cool-down finds it well again. The real OpenAI-compatible
adapter against the loopback /v1/rerank server, with an injected clock for the cool-down. Only the hanging service's
calls have a short deadline; what a call cost shows in the requests the service received, never in seconds."""

from __future__ import annotations

import dataclasses

import pytest

from rag_core.errors import RetrievalError
from rag_core.records import SearchOptions
from rag_core.rerank.circuit import GuardedReranker
from rag_core.rerank.openai_compat import OpenAICompatReranker
from rag_core.retrieval import KnowledgeRetriever, RerankParams
from tests.contracts.remote import GENEROUS, HANG, arrived
from tests.retrieval.fakes import ScriptedPort
from tests.retrieval.test_rerank import HITS
from tests.servers import Reply
from tests.servers.rerank import OpenAIRerankServer

TIMEOUT = 0.3  # rerank.timeout: what a hanging service costs one search (no retries)
HUNG = Reply.json(200, {"results": []}, delay=HANG)  # answers long after the deadline (the server stops it)


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


def make_guarded(server, clock, timeout: float = GENEROUS, **circuit) -> GuardedReranker:
    adapter = OpenAICompatReranker(server.base_url, "test-rerank", "", timeout=timeout, max_retries=0)
    return GuardedReranker(adapter, **{"failures": 3, "cooldown": 30.0, **circuit}, clock=clock)


@pytest.fixture
def guarded(server, clock) -> GuardedReranker:
    """A generous deadline: the tests that use it are about what the service answers, not about its time."""
    return make_guarded(server, clock)


def lookup(reranker, **rerank):
    return KnowledgeRetriever(ScriptedPort(HITS), reranker=reranker).lookup(
        "q", search=SearchOptions(mode="dense"), rerank=RerankParams(candidates=5, **rerank))


def test_a_hanging_reranker_is_skipped_after_three_timeouts_then_tried_again(server, clock) -> None:
    guarded = make_guarded(server, clock, TIMEOUT)
    server.always(HUNG)
    for n in range(1, 4):
        result = lookup(guarded)  # waits out the deadline: the service never answers in time
        assert result.rerank.error and not result.rerank.skipped
        assert guarded.state().failures == n
    (warning,) = result.warnings
    assert warning.startswith("Reranking with openai:test-rerank failed (") and "0.3 s" in warning
    state = guarded.state()
    assert (state.state, state.failures, state.retry_in_s) == ("open", 3, 30.0)

    result = lookup(guarded)  # skipped at once: no request, no deadline
    assert arrived(server, 3)
    assert result.rerank.skipped and not result.rerank.applied and result.rerank.candidates == 0
    assert [c.fused_rank for c in result.candidates] == list(range(1, len(HITS) + 1))  # the fused order
    assert result.to_dict()["rerank"]["skipped"] is True
    (warning,) = result.warnings
    assert warning.startswith("Reranking with openai:test-rerank was skipped: it failed 3 times in a row (last: ")
    assert warning.endswith("tried again in 30 s (rerank.circuit-cooldown). The evidence is in the fused order.")
    with pytest.raises(RetrievalError, match=r"^Reranking with openai:test-rerank was skipped: it failed 3 times"):
        lookup(guarded, on_error="fail")  # fails as fast: no request either
    assert arrived(server, 3)

    clock.now += 29
    assert guarded.state().retry_in_s == 1.0 and lookup(guarded).rerank.skipped
    clock.now += 1  # cool-down over: one trial call; it still hangs, so the circuit opens for another 30 s
    assert guarded.state().state == "half-open"
    result = lookup(guarded)
    assert result.rerank.error and not result.rerank.skipped and arrived(server, 4)
    assert guarded.state().state == "open" and guarded.state().retry_in_s == 30.0
    assert lookup(guarded).rerank.skipped and arrived(server, 4)

    server.always(None)  # the service is back: the next trial closes the circuit
    # ... and answers in its own time: the trial's deadline is not what this step is about
    guarded.inner.policy = dataclasses.replace(guarded.inner.policy, timeout=GENEROUS)
    clock.now += 30
    result = lookup(guarded)
    assert result.rerank.applied and not result.warnings and arrived(server, 5)
    assert guarded.state().to_dict() == {"state": "closed", "failures": 0, "retry_in_s": 0.0, "last_error": ""}


def test_only_failures_of_the_service_count_and_a_success_resets_them(server, guarded) -> None:
    server.script(Reply.json(503, {"message": "overloaded"}), Reply.json(503, {"message": "overloaded"}))
    assert lookup(guarded).rerank.error and lookup(guarded).rerank.error
    assert guarded.state().failures == 2
    assert lookup(guarded).rerank.applied and guarded.state().failures == 0  # not "in a row" any more
    # A refused request (404: no such model) is an answer: the service is reachable, nothing to skip.
    server.always(Reply.json(404, {"message": "The model `test-rerank` does not exist."}))
    for _ in range(4):
        result = lookup(guarded)
        assert result.rerank.error and not result.rerank.skipped
    assert guarded.state().state == "closed" and guarded.state().failures == 0


def test_circuit_failures_0_never_skips(server, clock) -> None:
    never = make_guarded(server, clock, failures=0)
    server.always(Reply.json(502, {"message": "bad gateway"}))
    for _ in range(4):
        assert not lookup(never).rerank.skipped
    assert len(server.requests) == 4 and never.state().state == "closed" and never.state().failures == 4
