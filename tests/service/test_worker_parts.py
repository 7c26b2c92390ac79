"""The parts of `serve --workers N` that need no running workers (rag_core.service.workers): the chat-turn limit
counted over every worker, the settings a worker opens its knowledge base with, the header naming the worker."""

from __future__ import annotations

import multiprocessing
import os

from fastapi import FastAPI
from starlette.testclient import TestClient

from rag_core.config import load_settings
from rag_core.service.workers import WORKER_HEADER, SharedCapacity, WorkerHeader, worker_settings


def test_chat_turns_are_counted_over_every_worker() -> None:
    counts = multiprocessing.get_context("spawn").Array("i", 2)
    one, two = SharedCapacity(3, counts, 0), SharedCapacity(3, counts, 1)
    assert one.enter() and one.enter() and two.enter()
    assert not two.enter() and not one.enter()  # three run on the server: the fourth is refused on either worker
    assert list(counts) == [2, 1]
    one.leave()
    assert two.enter() and list(counts) == [1, 2]
    counts[0] = 0  # what the supervisor does when worker 1 dies with a turn running
    assert one.enter() and not two.enter()


def test_a_worker_opens_a_milvus_lite_file_through_the_store_host(tmp_path) -> None:
    exclusive = load_settings(data_dir=tmp_path, env={}, overrides={"milvus.lite-mode": "exclusive"})
    assert worker_settings(exclusive)["milvus.lite-mode"] == "shared"
    server = load_settings(data_dir=tmp_path, env={}, overrides={"milvus.uri": "http://milvus.example:19530",
                                                                 "milvus.lite-mode": "exclusive"})
    assert worker_settings(server) is server  # a Milvus server: each worker reaches it directly


def test_every_answer_names_its_worker() -> None:
    app = FastAPI()

    @app.get("/ping")
    def ping() -> dict[str, str]:
        return {"ok": "yes"}

    with TestClient(WorkerHeader(app)) as client:
        r = client.get("/ping")
        missing = client.get("/nowhere")
    assert r.json() == {"ok": "yes"} and r.headers[WORKER_HEADER] == str(os.getpid())
    assert missing.status_code == 404 and missing.headers[WORKER_HEADER] == str(os.getpid())
