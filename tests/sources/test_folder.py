"""The folder reader (rag_core/sources/folder.py) against the SourceReader contract, and its globs, file types,
versions and URLs, on real temporary folders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rag_core.errors import SourceError
from rag_core.sources.folder import FolderReader
from rag_core.sources.types import build_reader
from tests.contracts.sources import SourceReaderContract


def make_folder(root: Path) -> Path:
    for path, text in {"a.md": "# A\n\nalpha", "runbooks/disk.md": "# Disk\n\nfree space", "notes.txt": "plain",
                       "drafts/wip.md": "# WIP", "image.xyz": "not a type the loaders read",
                       ".hidden.md": "hidden"}.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    return root


class TestFolderContract(SourceReaderContract):
    @pytest.fixture
    def reader(self, tmp_path: Path) -> FolderReader:
        return FolderReader(str(make_folder(tmp_path)))

    @pytest.fixture
    def broken(self, tmp_path: Path) -> tuple[FolderReader, str]:
        make_folder(tmp_path)
        os.symlink(tmp_path / "gone.md", tmp_path / "dangling.md")  # listed, cannot be read
        return FolderReader(str(tmp_path)), "dangling.md"

    @pytest.fixture
    def unreachable(self, tmp_path: Path) -> FolderReader:
        return FolderReader(str(tmp_path / "not-mounted"))


def test_only_the_types_the_loaders_read_and_no_hidden_files(tmp_path: Path) -> None:
    reader = FolderReader(str(make_folder(tmp_path)))
    assert [i.path for i in reader.items()] == ["a.md", "drafts/wip.md", "notes.txt", "runbooks/disk.md"]


def test_include_and_exclude_globs_on_the_relative_path(tmp_path: Path) -> None:
    make_folder(tmp_path)
    reader = build_reader("folder", str(tmp_path), {"include": ["*.md"], "exclude": ["drafts/*"]}, cache_dir=tmp_path)
    assert [i.path for i in reader.items()] == ["a.md", "runbooks/disk.md"]


def test_version_is_size_and_mtime_and_url_the_file_uri(tmp_path: Path) -> None:
    make_folder(tmp_path)
    [item] = [i for i in FolderReader(str(tmp_path)).items() if i.path == "a.md"]
    st = (tmp_path / "a.md").stat()
    assert item.version == f"{st.st_size}:{st.st_mtime_ns}"
    assert item.url == (tmp_path / "a.md").as_uri() and item.read() == b"# A\n\nalpha"
    os.utime(tmp_path / "a.md", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    [again] = [i for i in FolderReader(str(tmp_path)).items() if i.path == "a.md"]
    assert again.version != item.version


def test_a_link_to_a_file_outside_the_folder_is_not_read(tmp_path: Path) -> None:
    inside, outside = tmp_path / "in", tmp_path / "secret.md"
    inside.mkdir()
    outside.write_text("secret", encoding="utf-8")
    os.symlink(outside, inside / "link.md")
    [item] = FolderReader(str(inside)).items()
    with pytest.raises(SourceError, match="link.md: a link to a file outside the folder"):
        item.read()


def test_unknown_types_and_options_are_refused_naming_them(tmp_path: Path) -> None:
    with pytest.raises(SourceError,
                       match="unknown source type 'ftp'; known types: confluence, confluence-export, folder"):
        build_reader("ftp", "x", {}, cache_dir=tmp_path)
    with pytest.raises(SourceError, match="unknown option branch"):
        build_reader("folder", str(tmp_path), {"branch": "main"}, cache_dir=tmp_path)
