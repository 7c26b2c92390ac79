"""Tail-latency guards for the HTTP service's search path (the figures are in bench/api.py's table)."""

from __future__ import annotations

from threadpoolctl import threadpool_info

from rag_core.embedding.local import LocalUSEEmbedder


def blas_threads() -> int:
    return max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")


def test_a_query_embeds_with_one_blas_thread_and_a_batch_with_the_configured_count():
    # A second BLAS thread spins on a single short text: measured on 2 busy cores, embed_query took 28 ms of
    # CPU (p95 240 ms) with OpenBLAS's default of one thread per core, 2.3 ms (p95 10 ms) with one.
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

    asyncio.run(main())
    assert flags and flags[0] != 0
