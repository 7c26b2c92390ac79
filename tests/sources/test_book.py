"""The sources kept per knowledge base (rag_core/sources/book.py): a file in the data folder by default, a row of
the shared database with database.url; names, lookups and a failed write that loses nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core.bootstrap import build_source_book
from rag_core.config import load_settings
from rag_core.errors import SourceError
from rag_core.sources.book import Source, default_name


def book_in(data: Path, **overrides: str):
    return build_source_book(load_settings(data_dir=data, env={}, config_file=None, overrides=overrides), env={})


def test_kept_in_the_data_folder_by_default(tmp_path: Path) -> None:
    book = book_in(tmp_path)
    book.add(Source("docs", "biz", "folder", "/mnt/docs", "docs", {"include": ["*.md"]}))
    book.add(Source("docs", "small", "folder", "/mnt/docs", "docs"))
    assert json.loads((tmp_path / "sources.json").read_text())["sources"].keys() == {"biz/docs", "small/docs"}
    again = book_in(tmp_path)
    assert again.get("biz/docs").options == {"include": ["*.md"]} and again.get("docs", kb="small").kb == "small"
    with pytest.raises(SourceError, match="in several knowledge bases \\(biz, small\\); name it as KB/docs"):
        again.get("docs")
    with pytest.raises(SourceError, match="has a source 'docs' already"):
        again.add(Source("docs", "biz", "folder", "/x", "x"))
    with pytest.raises(SourceError, match="source biz/docs fills the folder docs/ already"):
        again.add(Source("sub", "biz", "folder", "/x", "docs/sub"))
    with pytest.raises(SourceError, match="source name 'a b'"):
        again.add(Source("a b", "biz", "folder", "/x", "x"))
    saved = again.save(again.get("biz/docs"), {"added": 1}, {"a.md": {"version": "1:2", "hash": "h"}})
    assert book_in(tmp_path).get("biz/docs").indexed == saved.indexed and saved.to_dict()["documents"] == 1
    again.remove(again.get("small/docs"))
    assert [s.key for s in book_in(tmp_path).all()] == ["biz/docs"]


def test_a_failed_write_leaves_the_sources_as_they_were(tmp_path: Path, monkeypatch) -> None:
    book = book_in(tmp_path)
    book.add(Source("docs", "biz", "folder", "/mnt/docs", "docs"))
    before = (tmp_path / "sources.json").read_text()

    def fail(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("rag_core.store.kept.write_atomic", fail)
    with pytest.raises(OSError):
        book.add(Source("more", "biz", "folder", "/mnt/more", "more"))
    assert (tmp_path / "sources.json").read_text() == before


def test_kept_in_the_shared_database_with_database_url(tmp_path: Path) -> None:
    url = f"sqlite:///{(tmp_path / 'shared.db').as_posix()}"
    book = book_in(tmp_path, **{"database.url": url})
    book.add(Source("docs", "biz", "folder", "/mnt/docs", "docs"))
    assert not (tmp_path / "sources.json").exists()
    assert book_in(tmp_path, **{"database.url": url}).get("docs").location == "/mnt/docs"
    assert book_in(tmp_path).all() == []  # the data folder's file is another place


def test_a_default_name_from_the_location() -> None:
    assert default_name("/mnt/team docs/") == "team_docs"
    assert default_name("https://example.org/org/runbooks.git") == "runbooks"
    assert default_name("/") == "source"
    assert default_name("/home/me/Downloads/Export-2f3c.zip") == "Export-2f3c"
