"""A `.db` that is not a Milvus Lite database is refused untouched; a damaged one is reported as damaged
with what to do (never as "open in another program")."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from rag_core.cli import main
from rag_core.store import LiteOptions, MilvusStore
from rag_core.store.lite import file as lite_file
from tests.helpers import SAMPLE_KB, make_workbench

pytestmark = pytest.mark.milvus  # opens Milvus Lite in its tests: not in `make test-unit`


DOCS = ["runbooks/cpu_high.md", "runbooks/disk_full.md"]


@pytest.fixture(scope="module")
def good_data(tmp_path_factory, local_embedder) -> Path:
    """A data dir with two documents, closed."""
    data = tmp_path_factory.mktemp("good") / "data"
    wb = make_workbench(data, embedder=local_embedder)
    reports = wb.ingestor.ingest_paths([SAMPLE_KB / doc for doc in DOCS], prefix="runbooks")
    assert {r.status for r in reports} == {"added"} and sorted(r.doc_id for r in reports) == DOCS
    wb.close()
    return data


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def opened(db: Path, mode: str) -> None:
    store = MilvusStore(str(db), "biz", lite=LiteOptions(mode, 30))
    try:
        store.open("local:x", 4)
    finally:
        store.close()


@pytest.mark.parametrize("mode", ["exclusive", "shared"])
def test_another_programs_sqlite_file_is_refused_untouched(tmp_path: Path, mode: str) -> None:
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE invoices (id INTEGER, total REAL)")
        connection.execute("INSERT INTO invoices VALUES (1, 9.5)")
    before = digest(db)
    with pytest.raises(lite_file.NotALiteDatabase, match=r"SQLite database of another program \(tables: invoices\)"):
        opened(db, mode)
    assert digest(db) == before
    assert not (tmp_path / ".app.db.host").exists()  # refused before any host was started


def test_a_file_that_is_not_sqlite_is_refused_by_the_cli(tmp_path: Path, capsys) -> None:
    db = tmp_path / "notes.db"
    db.write_bytes(b"just some notes, not a database\n" * 10)
    before = digest(db)
    assert main(["--data-dir", str(tmp_path), "--set", f"milvus.uri={db}", "docs"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a Milvus Lite database" in err and "Traceback" not in err
    assert digest(db) == before


@pytest.mark.parametrize("damage", ["truncated", "zeroed"])
def test_damage_is_reported_with_what_to_do(good_data: Path, tmp_path: Path, damage: str, capsys) -> None:
    data = tmp_path / "data"
    shutil.copytree(good_data, data)
    db = data / "milvus.db"
    content = db.read_bytes()
    db.write_bytes(content[: len(content) // 2] if damage == "truncated" else b"\x00" * len(content))
    before = digest(db)
    assert main(["--data-dir", str(data), "--set", "milvus.lite-mode=shared", "docs"]) == 2
    err = capsys.readouterr().err
    assert "is damaged" in err and "already open" not in err and "another program" not in err
    assert digest(db) == before and not (data / ".milvus.db.host").exists()
    # Each kept original's sidecar names its document: the advice is to rebuild from them (tests/store/
    # test_rebuild.py runs it); without kept originals, to ingest the sources into a fresh data dir.
    assert f"`python -m rag_core --data-dir {tmp_path / 'data-rebuilt'} rebuild --from {data} --collection biz`" in err
    shutil.rmtree(data / "originals")
    assert main(["--data-dir", str(data), "--set", "milvus.lite-mode=shared", "docs"]) == 2
    err = capsys.readouterr().err
    assert f"No kept originals are in {data / 'originals' / 'biz'}" in err
    assert f"`python -m rag_core --data-dir {tmp_path / 'data-rebuilt'} ingest FOLDER`" in err


def test_damage_in_a_data_dir_of_the_older_layout_gives_a_rebuild_command_that_works(good_data: Path,
                                                                                     tmp_path: Path, capsys) -> None:
    """Data dirs from before versioned originals kept them as uploads/<collection>/<doc_id>."""
    data = tmp_path / "data"
    data.mkdir()
    legacy = data / "uploads" / "biz"
    for doc in DOCS:
        (legacy / doc).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SAMPLE_KB / doc, legacy / doc)
    content = (good_data / "milvus.db").read_bytes()
    (data / "milvus.db").write_bytes(content[: len(content) // 2])
    assert main(["--data-dir", str(data), "docs"]) == 2
    err = capsys.readouterr().err
    command = f"python -m rag_core --data-dir {tmp_path / 'data-rebuilt'} rebuild --from {data} --collection biz"
    assert "is damaged" in err and f"`{command}`" in err
    assert main(command.split()[3:] + ["--quiet"]) == 0
    capsys.readouterr()
    assert main(["--data-dir", str(tmp_path / "data-rebuilt"), "docs", "--json"]) == 0
    assert sorted(d["doc_id"] for d in json.loads(capsys.readouterr().out)) == DOCS


def test_corruption_inside_is_found_by_diagnose(good_data: Path, tmp_path: Path) -> None:
    db = tmp_path / "milvus.db"
    shutil.copy(good_data / "milvus.db", db)
    lite_file.check(db)  # the header is fine: Lite would be allowed to try
    content = bytearray(db.read_bytes())
    page = int.from_bytes(content[16:18], "big")
    content[2 * page:3 * page] = b"\xa5" * page  # the third page: a b-tree page of Lite's tables
    db.write_bytes(bytes(content))
    error = lite_file.diagnose(db)
    assert isinstance(error, lite_file.DamagedDatabase) and "into a fresh data dir" in str(error)
    assert lite_file.diagnose(good_data / "milvus.db") is None
