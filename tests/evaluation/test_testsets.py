"""Test sets on disk: the item format (read by `eval` as it is), named sets under the data folder, atomic
saves, and review (accept, drop, edit, mark as not answerable)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rag_core.config import load_settings
from rag_core.errors import EvaluationError
from rag_core.evaluation import load_user_set
from rag_core.evaluation.testsets import (
    TestItem,
    list_test_sets,
    load_test_set,
    meta_path,
    read_test_set,
    review_item,
    save_test_set,
    saved_sets_dir,
    write_test_set,
)

ITEMS = (
    TestItem("g001", "When does HighCPUUsageCritical fire?", ("runbooks/cpu_high.md",),
             ("utilisation stays above 95% for 5 minutes",), "runbooks/cpu_high.md#chunk-1", "en", "model", "question"),
    TestItem("g002", "磁盘满了哪些目录不能删？", ("runbooks/disk_full.md",), ("/var/lib/mysql",),
             "runbooks/disk_full.md#chunk-3", "zh", "model", "question"),
    TestItem("g003", "What is the refund window for late payments in Europe?", (), (), None, "en", "model",
             "unanswerable", should_answer=False),
)


def test_items_round_trip_and_every_line_is_the_simple_format_plus_fields(tmp_path: Path) -> None:
    path = write_test_set(tmp_path / "gen.jsonl", ITEMS, {"generator": "model", "seed": 3})
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines[0] == {"id": "g001", "query": "When does HighCPUUsageCritical fire?",
                        "relevant": ["runbooks/cpu_high.md"], "answer": "utilisation stays above 95% for 5 minutes",
                        "source": "runbooks/cpu_high.md#chunk-1", "lang": "en", "generator": "model",
                        "kind": "question", "should_answer": True, "review": "unreviewed"}
    assert "磁盘满了" in path.read_text(encoding="utf-8")  # UTF-8 as written, not \\u escapes
    back = read_test_set(path)
    assert back.items == ITEMS and back.meta == {"generator": "model", "seed": 3} and back.name == "gen"
    assert meta_path(path).name == "gen.meta.json"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_eval_reads_a_generated_set_as_it_is_leaving_out_what_retrieval_cannot_score(tmp_path: Path) -> None:
    items = review_item(ITEMS, "g002", state="dropped")
    path = write_test_set(tmp_path / "gen.jsonl", items)
    eval_set = load_user_set(path)
    assert [q.query_id for q in eval_set.queries] == ["g001"]
    assert eval_set.queries[0].answers[0].text == "utilisation stays above 95% for 5 minutes"
    assert eval_set.info["excluded"] == {"dropped": 1, "should_not_answer": 1}
    only_unanswerable = write_test_set(tmp_path / "none.jsonl", ITEMS[2:])
    with pytest.raises(EvaluationError, match=r"contains no queries a retrieval run can score \(left out: 1 should "
                                              r"not answer\)"):
        load_user_set(only_unanswerable)


@pytest.mark.parametrize(("line", "message"), [
    ('{"query": "a", "relevant": ["d"], "review": "maybe"}', r"line 1: `review` \"maybe\" is not one of unreviewed"),
    ('{"query": "a", "relevant": ["d"], "should_answer": "sometimes"}', r"`should_answer` must be true or false"),
    ('{"query": "a", "relevant": []}', r"`relevant` is missing or empty: .* or mark the line \"should_answer\": false"),
    ('{"query": "a", "relevant": ["d"], "generator": "gpt"}', r"`generator` \"gpt\" is not one of model, offline"),
    ('{"query": "a", "relevant": ["d"], "colour": "red"}', r"unknown field\(s\) colour"),
    ('{"query": "a", "relevant": ["d"], "source": 3}', r"`source` must be an evidence key"),
    ('{"query": "a", "relevant": ["d"], "history": "user: b"}', r"line 1: `history` must be a list of"),
    ('{"query": "a", "relevant": ["d"], "history": [{"role": "bot", "content": "b"}]}',
     r'line 1: `history`, turn 1: role must be user or assistant \(got "bot"\)'),
    ('{"query": "a", "relevant": ["d"], "kind": "chat"}', r"`kind` \"chat\" is not one of .*follow_up"),
    ('{"id": "x", "query": "a", "relevant": ["d"]}\n{"id": "x", "query": "b", "relevant": ["d"]}',
     r"'x' appears twice"),
])
def test_a_bad_line_is_one_clear_error_naming_it(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(EvaluationError, match=message):
        read_test_set(path)


def test_a_follow_up_keeps_its_earlier_turns_through_a_file_and_review(tmp_path: Path) -> None:
    line = {"id": "f1", "query": "它的默认值是多少？", "relevant": ["product/vector_search_zh.md"],
            "answer": "默认是 `hybrid`。", "kind": "follow_up",
            "history": [{"role": "user", "content": "向量检索支持哪些检索模式？"},
                        {"role": "assistant", "content": "支持 dense、bm25 和 hybrid。"}]}
    path = tmp_path / "conv.jsonl"
    path.write_text(json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    [item] = read_test_set(path).items
    assert [(t.role, t.content) for t in item.history] == [("user", "向量检索支持哪些检索模式？"),
                                                          ("assistant", "支持 dense、bm25 和 hybrid。")]
    assert item.to_dict()["history"] == line["history"] and "history" not in ITEMS[0].to_dict()
    [reviewed] = review_item((item,), "f1", query="那它的默认值呢？", state="accepted")
    assert reviewed.history == item.history and reviewed.query == "那它的默认值呢？"
    saved = write_test_set(tmp_path / "again.jsonl", (reviewed,))
    assert json.loads(saved.read_text(encoding="utf-8"))["history"] == line["history"]  # saved (downloaded) as is


def test_a_hand_written_set_reads_as_items_too(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text('{"query": "disk full?", "relevant": "runbooks/disk_full.md", "answer": ["a", "b"]}\n',
                    encoding="utf-8")
    [item] = read_test_set(path).items
    assert (item.id, item.relevant, item.answers, item.generator, item.review) == (
        "q1", ("runbooks/disk_full.md",), ("a", "b"), "", "unreviewed")


def test_named_sets_live_under_the_data_folder_and_are_listed_and_loaded_by_name(tmp_path: Path) -> None:
    root = saved_sets_dir(load_settings(data_dir=tmp_path, env={}, config_file=None))
    assert root == tmp_path / "eval" / "testsets" and list_test_sets(root) == []
    save_test_set(root, "biz-3", ITEMS, {"generator": "model"})
    save_test_set(root, "a_offline", ITEMS[:1])
    (root / "broken.jsonl").write_text("not json\n", encoding="utf-8")
    listed = list_test_sets(root)
    assert [(s.name, s.items, s.generator) for s in listed] == [("a_offline", 1, "model"), ("biz-3", 3, "model")]
    assert load_test_set(root, "biz-3").items == ITEMS
    with pytest.raises(EvaluationError, match=r"No test set named 'nope' \(saved sets: a_offline, biz-3\)"):
        load_test_set(root, "nope")
    with pytest.raises(EvaluationError, match="line 1: not valid JSON"):
        load_test_set(root, "broken")
    for bad in ("../x", "", "a b", "x.meta"):
        with pytest.raises(EvaluationError, match="Test set name"):
            save_test_set(root, bad, ITEMS)


def test_a_failed_save_leaves_the_previous_set_as_it_was(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "testsets"
    path = save_test_set(root, "kept", ITEMS, {"seed": 1})
    before = path.read_bytes()

    def broken_replace(src, dst):  # the disk fills up at the rename
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        save_test_set(root, "kept", ITEMS[:1], {"seed": 2})
    monkeypatch.undo()
    assert path.read_bytes() == before and json.loads(meta_path(path).read_text()) == {"seed": 1}
    assert sorted(p.name for p in root.iterdir()) == ["kept.jsonl", "kept.meta.json"]  # nothing half-written


def test_review_accepts_drops_edits_and_marks_items(tmp_path: Path) -> None:
    items = review_item(ITEMS, "g001", state="accepted")
    assert items[0].review == "accepted" and items[1:] == ITEMS[1:]
    items = review_item(items, "g002", query="磁盘满时哪些目录绝对不能删除？")
    assert (items[1].query, items[1].review) == ("磁盘满时哪些目录绝对不能删除？", "edited")
    items = review_item(items, "g002", answer="/var/lib/milvus")
    assert items[1].answers == ("/var/lib/milvus",)
    items = review_item(items, "g001", should_answer=False)
    assert items[0].should_answer is False and items[0].review == "accepted"
    items = review_item(items, "g003", state="dropped")
    saved = read_test_set(write_test_set(tmp_path / "r.jsonl", items))
    assert saved.items == items and [i.id for i in saved.active] == ["g001", "g002"]
    assert saved.counts() == {"unreviewed": 0, "accepted": 1, "edited": 1, "dropped": 1, "should_not_answer": 1}
    with pytest.raises(EvaluationError, match="cannot be marked answerable"):
        review_item(ITEMS, "g003", should_answer=True)
    with pytest.raises(EvaluationError, match="No item 'g9'"):
        review_item(ITEMS, "g9", state="accepted")
    with pytest.raises(EvaluationError, match="Review state 'gone'"):
        review_item(ITEMS, "g001", state="gone")
