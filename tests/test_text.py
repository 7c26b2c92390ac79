"""rag_core.text.fold: what the BM25 channel reads (store.milvus.schema `bm25_text`, the store fake, the queries)."""

from __future__ import annotations

import threading

from rag_core.text import fold


def test_fold_turns_traditional_into_simplified_and_leaves_the_rest() -> None:
    assert fold("資料庫的記憶體使用率過高，請檢查連線數。") == "资料库的记忆体使用率过高，请检查连线数。"
    assert fold("磁盘使用率超过 90% 怎么办？") == "磁盘使用率超过 90% 怎么办？"  # Simplified already
    assert fold("Disk usage above 90%: clean /var/log (run `du -sh`).") == (
        "Disk usage above 90%: clean /var/log (run `du -sh`).")
    assert fold("") == ""
    mixed = "後端 backend 服務 API 回應時間 p95 > 200 ms"
    assert fold(mixed) == "后端 backend 服务 API 回应时间 p95 > 200 ms"
    assert len(fold(mixed)) == len(mixed)


def test_fold_from_many_threads_gives_each_its_own_answer() -> None:
    texts = [f"第{i}個請求：記憶體與網路" + "測試" * (i % 7) for i in range(200)]
    expected = [fold(t) for t in texts]
    got: dict[int, str] = {}

    def work(start: int) -> None:
        for i in range(start, len(texts), 4):
            got[i] = fold(texts[i])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [got[i] for i in range(len(texts))] == expected
    assert expected[3] == "第3个请求：记忆体与网路" + "测试" * 3
