"""The TestSetStore contract (rag_core.evaluation.testsets), run on every adapter: the folder of files (the embedded
default), and the SQL store on an SQLite file and on a real PostgreSQL (tests/postgres.py); and which one
`bootstrap.build_test_sets` chooses."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import rag_core.evaluation.testsets as testsets
from rag_core.bootstrap import build_test_sets
from rag_core.config import load_settings
from rag_core.db.engine import engine
from rag_core.errors import EvaluationError
from rag_core.evaluation.testsets import FolderTestSets, TestItem, UnknownTestSet, saved_sets_dir
from rag_core.evaluation.testsets_sql import SqlTestSets

ITEMS = (
    TestItem("g001", "When does HighCPUUsageCritical fire?", ("runbooks/cpu_high.md",),
             ("utilisation stays above 95% for 5 minutes",), "runbooks/cpu_high.md#chunk-1", "en", "model", "question"),
    TestItem("g002", "磁盘满了哪些目录不能删？", ("runbooks/disk_full.md",), ("/var/lib/mysql", "/var/lib/pg"),
             "runbooks/disk_full.md#chunk-3", "zh", "model", "question", review="edited"),
    TestItem("g003", "What is the refund window for late payments in Europe?", (), (), None, "en", "model",
             "unanswerable", should_answer=False, review="dropped"),
)
META = {"generator": "model", "knowledge_base": "runbooks", "seed": 3, "rejected": {"too_short": 2}}


class SetStoreContract:
    """The behaviour every TestSetStore has (a test class subclasses it and provides `sets`, an open, empty store).
    `one_write`: the items and the description are written at once (a database's row); the folder writes two files,
    each whole, the description first."""

    one_write = True

    @pytest.fixture
    def sets(self) -> testsets.TestSetStore:
        raise NotImplementedError("a test class provides the adapter under test")

    def test_is_a_test_set_store(self, sets: testsets.TestSetStore) -> None:
        assert isinstance(sets, testsets.TestSetStore)
        assert sets.where and "password" not in sets.where

    def test_empty(self, sets: testsets.TestSetStore) -> None:
        assert sets.list_sets() == []
        with pytest.raises(UnknownTestSet, match=r"No test set named 'nope' \(saved sets: none yet\)"):
            sets.load("nope")

    def test_a_saved_set_is_read_back_exactly_and_listed_by_name(self, sets: testsets.TestSetStore) -> None:
        where = sets.save("biz-3", ITEMS, META)
        sets.save("a_manual", [TestItem("q1", "Who is on call?", ("oncall.md",))])
        assert "biz-3" in where
        loaded = sets.load("biz-3")
        assert (loaded.name, loaded.items, dict(loaded.meta)) == ("biz-3", ITEMS, META)
        assert loaded.counts()["dropped"] == 1 and len(loaded.active) == 2
        listed = sets.list_sets()
        assert [(s.name, s.items, s.generator) for s in listed] == [("a_manual", 1, "manual"), ("biz-3", 3, "model")]
        assert all(s.modified.startswith("20") for s in listed)
        with pytest.raises(UnknownTestSet, match=r"No test set named 'nope' \(saved sets: a_manual, biz-3\)"):
            sets.load("nope")

    def test_a_save_replaces_the_whole_set_and_none_keeps_its_description(self, sets: testsets.TestSetStore) -> None:
        sets.save("kept", ITEMS, META)
        sets.save("kept", ITEMS[:1])
        assert sets.load("kept").items == ITEMS[:1] and dict(sets.load("kept").meta) == META
        sets.save("kept", ITEMS[1:], {"seed": 4})
        again = sets.load("kept")
        assert again.items == ITEMS[1:] and dict(again.meta) == {"seed": 4}
        assert [s.name for s in sets.list_sets()] == ["kept"]
        sets.save("new", ITEMS[:1])  # no description given: none
        assert dict(sets.load("new").meta) == {}

    def test_bad_names_and_empty_sets_are_refused_and_nothing_is_written(self, sets: testsets.TestSetStore) -> None:
        for bad in ("../x", "", "a b", "x.meta", "é"):
            with pytest.raises(EvaluationError, match="Test set name"):
                sets.save(bad, ITEMS)
            with pytest.raises(EvaluationError, match="Test set name"):
                sets.load(bad)
        with pytest.raises(EvaluationError, match="no items"):
            sets.save("empty", [])
        sets.save("kept", ITEMS)
        with pytest.raises(EvaluationError, match="no items"):
            sets.save("kept", [])
        assert [s.name for s in sets.list_sets()] == ["kept"] and sets.load("kept").items == ITEMS

    def test_a_reader_sees_the_old_set_or_the_new_one_never_a_mix(self, sets: testsets.TestSetStore) -> None:
        small = tuple(TestItem(f"a{n}", f"question {n}", ("a.md",)) for n in range(3))
        large = tuple(TestItem(f"b{n}", f"question {n}", ("b.md",)) for n in range(300))
        sets.save("busy", small, {"v": "small"})
        seen: list[tuple[int, str]] = []
        done = threading.Event()

        def read() -> None:
            while not done.is_set():
                got = sets.load("busy")
                seen.append((len(got.items), got.items[0].id[0] + str(got.meta.get("v"))))

        reader = threading.Thread(target=read)
        reader.start()
        try:
            for n in range(10):
                sets.save("busy", large if n % 2 == 0 else small, {"v": "large" if n % 2 == 0 else "small"})
        finally:
            done.set()
            reader.join()
        assert seen and {(n, first[0]) for n, first in seen} <= {(3, "a"), (300, "b")}  # the items are never mixed
        if self.one_write:
            assert set(seen) <= {(3, "asmall"), (300, "blarge")}


class TestFolderTestSets(SetStoreContract):
    one_write = False

    @pytest.fixture
    def sets(self, tmp_path: Path) -> FolderTestSets:
        return FolderTestSets(tmp_path / "eval" / "testsets")


class TestSqliteTestSets(SetStoreContract):
    @pytest.fixture
    def sets(self, tmp_path: Path) -> Iterator[SqlTestSets]:
        opened = SqlTestSets(engine(f"sqlite:///{tmp_path / 'team.db'}"))
        yield opened
        opened.close()


class TestPostgresTestSets(SetStoreContract):
    @pytest.fixture
    def sets(self, postgres_db: str) -> Iterator[SqlTestSets]:
        opened = SqlTestSets(engine(postgres_db))
        yield opened
        opened.close()


def test_the_folder_is_the_default_and_the_database_is_used_when_database_url_is_set(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path, env={}, config_file=None)
    folder = build_test_sets(settings)
    assert isinstance(folder, FolderTestSets) and folder.root == saved_sets_dir(settings)
    folder.save("on-disk", ITEMS)
    assert (tmp_path / "eval" / "testsets" / "on-disk.jsonl").is_file()
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    shared = build_test_sets(load_settings(data_dir=tmp_path, env={}, config_file=None,
                                           overrides={"database.url": url}))
    by_env = build_test_sets(settings, {"RAG_DATABASE_URL": url})
    try:
        assert isinstance(shared, SqlTestSets) and isinstance(by_env, SqlTestSets)
        assert shared.list_sets() == []  # the files stay files: not read from the database
        shared.save("in-db", ITEMS)
        assert [s.name for s in by_env.list_sets()] == ["in-db"] and by_env.list_sets()[0].path is None
        assert [s.name for s in folder.list_sets()] == ["on-disk"]
    finally:
        shared.close()
        by_env.close()
