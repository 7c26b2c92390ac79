"""Tail-latency guards for the HTTP service's search path (the figures are in bench/api.py's table)."""

from __future__ import annotations

import json

from threadpoolctl import threadpool_info

from rag_core.embedding.local import TEST_CACHE_ENV, LocalUSEEmbedder
from tests.service import live


def blas_threads() -> int:
    return max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")


def test_a_query_embeds_with_one_blas_thread_and_a_batch_with_the_configured_count(monkeypatch):
    # A second BLAS thread spins on a single short text: measured on 2 busy cores, embed_query took 28 ms of
    # CPU (p95 240 ms) with OpenBLAS's default of one thread per core, 2.3 ms (p95 10 ms) with one.
    monkeypatch.delenv(TEST_CACHE_ENV, raising=False)  # the model itself must run (tests/conftest.py's cache)
    embedder = LocalUSEEmbedder(threads=3)
    embedder.embed_query("load the model")
    seen: list[int] = []
    model = embedder._model.get()
    encode = model.encode
    model.encode = lambda texts: (seen.append(blas_threads()), encode(texts))[1]
    vector = embedder.embed_query("磁盘空间不足")
    embedder.embed_documents(["one document", "another"])
    assert seen == [1, 3]
    assert vector.shape == (512,)


def test_the_serve_socket_gets_tcp_nodelay_on_every_connection():
    # Without it every answer's body waited for the client's delayed ACK (+40 ms per request, measured).
    import asyncio
    import socket

    from rag_core.service.server import bind

    listening = bind("127.0.0.1", 0)
    port = listening.getsockname()[1]
    flags: list[int] = []

    async def main() -> None:
        accepted = asyncio.Event()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                flags.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()
                accepted.set()

        server = await asyncio.get_running_loop().create_server(Probe, sock=listening)
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.wait_for(accepted.wait(), 10)
        writer.close()
        server.close()
        await server.wait_closed()

    live.run_async(main())
    assert flags and flags[0] != 0


def test_open_streams_do_not_take_the_threads_searches_run_in(kb):
    # Streams waiting for a slow model each hold a thread for the whole wait. The default pool is shrunk to two
    # threads here, and the model holds its three answers until the search and the document list are answered: had
    # they needed a thread the streams hold, they would wait for the model, which waits for them (until the
    # clients' timeout).
    import asyncio
    import threading

    import anyio
    import httpx

    from tests.e2e.slow_chat import SlowOpenAIChatServer
    from tests.helpers import wait_until
    from tests.servers.chat import Completion
    from tests.service.conftest import CHAT_KEY, model_settings, serve

    with SlowOpenAIChatServer(api_key=CHAT_KEY, gap=0.05) as model:
        model.reply(*[Completion.say("slow answer", parts=2)] * 3)
        model.hold()
        server = serve(kb, env={"OPENAI_API_KEY": CHAT_KEY}, **model_settings(model.base_url))
        try:
            async def shrink() -> None:
                anyio.to_thread.current_default_thread_limiter().total_tokens = 2

            asyncio.run_coroutine_threadsafe(shrink(), server.server.servers[0].get_loop()).result(60)
            waiting = threading.Barrier(4)
            stop = threading.Event()

            def stream(i: int) -> None:
                with httpx.Client(base_url=server.url, timeout=60) as c, \
                        c.stream("POST", "/api/chat_stream", json={"Id": f"busy-{i}", "Question": "hi"}) as r:
                    events = live.sse_events(r)  # held: a dropped generator closes the response (the client leaves)
                    next(events)  # the session event: the turn now waits for the model
                    waiting.wait(60)
                    stop.wait(60)  # then leave, which stops the turn

            threads = [threading.Thread(target=stream, args=(i,)) for i in range(3)]
            for t in threads:
                t.start()
            waiting.wait(60)
            # the three turns are inside their first model call, each holding a thread
            assert wait_until(lambda: len(model.chat_requests()) == 3, timeout=60)
            r = httpx.get(f"{server.url}/v1/search", params={"query": "disk full"}, timeout=60)
            # Searches have a queue of their own now (api.lookup-threads); the document list runs in the default
            # pool, where the streams were stuck before they got threads of their own.
            listed = httpx.get(f"{server.url}/v1/documents", timeout=60)
            held = model.finished == []  # no answer of the model was written yet: the streams still wait
            stop.set()
            model.release()
            for t in threads:
                t.join(60)
            assert r.status_code == 200 and listed.status_code == 200 and held
        finally:
            server.stop()


class CountingPort:
    """The real search port, counting how many searches run at once (the most seen)."""

    def __init__(self, port, counter=None) -> None:
        import threading

        self.port = port
        self.counter = counter if counter is not None else {"now": 0, "most": 0, "lock": threading.Lock()}

    def configured(self, options):
        return CountingPort(self.port.configured(options), self.counter)

    def document_chunks(self, doc_id):  # the expansion and merge stages read whole documents, as through the port
        return self.port.document_chunks(doc_id)

    @property
    def store(self):  # the keywords of the hits are scored by the store behind the port (retrieval.keywords)
        return self.port.store

    def search(self, query, k, filters=None):
        import time

        c = self.counter
        with c["lock"]:
            c["now"] += 1
            c["most"] = max(c["most"], c["now"])
        try:
            time.sleep(0.05)  # long enough for the other requests to arrive while this one runs
            return self.port.search(query, k, filters)
        finally:
            with c["lock"]:
                c["now"] -= 1


def test_searches_beyond_api_lookup_threads_wait_in_one_queue_and_get_their_own_answers(kb):
    # The tail fix: /v1/search lookups run at most `api.lookup-threads` at once, the rest queue first come first
    # served (bench/api.py measures the tail with and without). Queued requests must still get exactly their own
    # answer, the same as in-process (timings aside).
    import dataclasses
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from rag_core.retrieval import KnowledgeRetriever
    from tests.service.conftest import serve
    from tests.service.test_native import without_timings

    port = CountingPort(kb.retriever.port)
    wb = dataclasses.replace(kb, retriever=KnowledgeRetriever(port, kb.retriever.defaults))
    queries = ["磁盘空间不足怎么办", "HighCPUUsage runbook", "payment gateway timeout", "memory leak",
               "disk full", "告警 处理"]
    server = serve(wb, api__lookup_threads=1)
    try:
        assert server.service.lookup_threads.total_tokens == 1
        with ThreadPoolExecutor(len(queries)) as pool:
            answers = list(pool.map(lambda q: httpx.get(f"{server.url}/v1/search", params={"query": q}, timeout=60),
                                    queries))
    finally:
        server.stop()
    assert [a.status_code for a in answers] == [200] * len(queries)
    assert port.counter["most"] == 1
    for query, answer in zip(queries, answers):
        expected = json.loads(json.dumps(kb.retriever.lookup(query).to_dict()))  # as JSON: a block's matched keys
        assert without_timings(answer.json()) == without_timings(expected)  # are a tuple in to_dict


def test_lookup_threads_default_to_four_times_the_cores(kb, monkeypatch):
    from rag_core.service import state

    monkeypatch.setattr(state.os, "cpu_count", lambda: 3)
    assert state.lookup_thread_count(kb.settings.with_overrides({"api.lookup-threads": 0})) == 12
    assert state.lookup_thread_count(kb.settings.with_overrides({"api.lookup-threads": 5})) == 5
    assert state.lookup_thread_count(None) == 12
