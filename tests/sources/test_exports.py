"""The Notion and Confluence export readers (rag_core/sources/exports.py) against the SourceReader contract, and
their paths, versions, meta and errors, on real zips made here the way the products make them."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest

from rag_core.errors import SourceError
from rag_core.files import FileLock
from rag_core.sources.book import Source, SourceBook
from rag_core.sources.exports import ConfluenceExportReader, NotionExportReader
from rag_core.sources.sync import sync
from rag_core.sources.types import build_reader
from rag_core.store.kept import MemoryDocument
from tests.contracts.sources import SourceReaderContract
from tests.helpers import make_workbench

A = "0123456789abcdef0123456789abcdef"
B = "fedcba9876543210fedcba9876543210"
C = "11111111111111111111111111111111"
D = "22222222222222222222222222222222"
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")


def notion_files() -> dict[str, bytes]:
    return {
        f"Handbook {A}.md": b"# Handbook\n\nWelcome.",
        f"Handbook {A}/Onboarding {B}.md": b"# Onboarding\n\n![](Onboarding%20" + B.encode() + b"/chart.png)",
        f"Handbook {A}/Onboarding {B}/chart.png": PNG,
        f"Handbook {A}/Onboarding {B}/checklist.txt": b"laptop, badge",
        f"Handbook {A}/Onboarding {B}/movie.mp4": b"not a type the loaders read",
        f"Handbook {A}/Tasks {C}.csv": b"Name,Status\nWrite docs,Done\n",
        f"Handbook {A}/Tasks {C}/Write docs {D}.md": b"# Write docs",
        "Notes 33333333333333333333333333333333.md": b"# Notes one",
        "Notes 44444444444444444444444444444444.md": b"# Notes two",
    }


def make_zip(path: Path, files: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def confluence_page(title: str, ancestors: list[tuple[str, str]], space: str = "Ops") -> bytes:
    crumbs = "".join(f'<li><span><a href="{href}">{text}</a></span></li>' for href, text in ancestors)
    return f"""<!DOCTYPE html><html><head><title>{space} : {title}</title></head><body>
<div id="page"><div id="main" class="aui-page-panel"><div id="main-header">
<div id="breadcrumb-section"><ol id="breadcrumbs">
<li class="first"><span><a href="index.html">{space}</a></span></li>{crumbs}
</ol></div>
<h1 id="title-heading" class="pagetitle"><span id="title-text"> {space} : {title} </span></h1></div>
<div id="content" class="view"><div id="main-content" class="wiki-content group"><p>About {title}.</p></div>
</div></div></div></body></html>""".encode()


def confluence_files() -> dict[str, bytes]:
    home = [("Ops-Home_100.html", "Ops Home")]
    return {
        "OPS/index.html": b"<html><head><title>Ops</title></head><body><h2>Available Pages:</h2></body></html>",
        "OPS/Ops-Home_100.html": confluence_page("Ops Home", []),
        "OPS/Runbooks_200.html": confluence_page("Runbooks", home),
        "OPS/Disk-full_300.html": confluence_page("Disk full / cleanup", [*home, ("Runbooks_200.html", "Runbo…")]),
        "OPS/400.html": confluence_page("No crumbs & more", []).replace(b"breadcrumb", b"crumbless"),
        "OPS/attachments/300/301.txt": b"du -sh /var/*",
        "OPS/attachments/300/302.png": PNG,
        "OPS/attachments/300/303.zip": b"not a type the loaders read",
        "OPS/attachments/999/1.txt": b"of no page in the export",
        "OPS/styles/site.css": b"body {}",
        "OPS/images/icons/bullet_blue.gif": b"GIF89a",
    }


def corrupt(zip_path: Path, entry: str) -> None:
    """Overwrite the middle of one entry's data in the zip file (its CRC no longer matches; deflate may fail)."""
    with zipfile.ZipFile(zip_path) as archive:
        info = archive.getinfo(entry)
    data = bytearray(zip_path.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for i in range(start, start + info.compress_size):
        data[i] ^= 0xFF
    zip_path.write_bytes(bytes(data))


class TestNotionContract(SourceReaderContract):
    @pytest.fixture
    def reader(self, tmp_path: Path) -> NotionExportReader:
        return NotionExportReader(str(make_zip(tmp_path / "Export.zip", notion_files())))

    @pytest.fixture
    def broken(self, tmp_path: Path) -> tuple[NotionExportReader, str]:
        zip_path = make_zip(tmp_path / "Export.zip", notion_files(), zipfile.ZIP_STORED)
        corrupt(zip_path, f"Handbook {A}/Onboarding {B}/checklist.txt")
        return NotionExportReader(str(zip_path)), "Handbook/Onboarding/checklist.txt"

    @pytest.fixture
    def unreachable(self, tmp_path: Path) -> NotionExportReader:
        return NotionExportReader(str(tmp_path / "missing.zip"))


class TestConfluenceContract(SourceReaderContract):
    @pytest.fixture
    def reader(self, tmp_path: Path) -> ConfluenceExportReader:
        return ConfluenceExportReader(str(make_zip(tmp_path / "OPS.zip", confluence_files())))

    @pytest.fixture
    def broken(self, tmp_path: Path) -> tuple[ConfluenceExportReader, str]:
        zip_path = make_zip(tmp_path / "OPS.zip", confluence_files())
        corrupt(zip_path, "OPS/attachments/300/301.txt")
        return ConfluenceExportReader(str(zip_path)), "Ops Home/Runbooks/Disk full - cleanup/301.txt"

    @pytest.fixture
    def unreachable(self, tmp_path: Path) -> ConfluenceExportReader:
        return ConfluenceExportReader(str(tmp_path / "missing.zip"))


def test_notion_paths_lose_their_ids_and_keep_them_on_a_collision(tmp_path: Path) -> None:
    reader = NotionExportReader(str(make_zip(tmp_path / "Export.zip", notion_files())))
    items = {i.path: i for i in reader.items()}
    assert list(items) == [
        "Handbook.md", "Handbook/Onboarding.md", "Handbook/Onboarding/chart.png",
        "Handbook/Onboarding/checklist.txt", "Handbook/Tasks.csv", "Handbook/Tasks/Write docs.md",
        "Notes.md", "Notes 44444444444444444444444444444444.md"]
    assert items["Handbook/Onboarding.md"].meta == {"notion_id": B}
    assert items["Handbook/Onboarding/chart.png"].meta == {"notion_id": B}   # the page it belongs to
    assert items["Handbook/Tasks.csv"].meta == {"notion_id": C}
    assert items["Handbook/Tasks/Write docs.md"].read() == b"# Write docs"
    assert items["Notes 44444444444444444444444444444444.md"].read() == b"# Notes two"
    assert all(i.url == "" for i in items.values())


def test_notion_versions_are_crc_and_size_and_change_with_the_entry(tmp_path: Path) -> None:
    files = notion_files()
    first = {i.path: i.version for i in NotionExportReader(str(make_zip(tmp_path / "1.zip", files))).items()}
    assert first["Handbook.md"] == f"{zipfile.crc32(files[f'Handbook {A}.md']):08x}:{len(files[f'Handbook {A}.md'])}"
    files[f"Handbook {A}/Tasks {C}/Write docs {D}.md"] = b"# Write docs\n\nNow with text."
    second = {i.path: i.version for i in NotionExportReader(str(make_zip(tmp_path / "2.zip", files))).items()}
    changed = [p for p in first if first[p] != second[p]]
    assert changed == ["Handbook/Tasks/Write docs.md"]


def test_an_unzipped_notion_export_is_read_too(tmp_path: Path) -> None:
    for name, data in notion_files().items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    reader = build_reader("notion-export", str(tmp_path), {}, cache_dir=tmp_path)
    items = {i.path: i for i in reader.items()}
    assert "Handbook/Tasks/Write docs.md" in items and items["Handbook.md"].read() == b"# Handbook\n\nWelcome."


def test_confluence_paths_follow_the_breadcrumbs(tmp_path: Path) -> None:
    reader = ConfluenceExportReader(str(make_zip(tmp_path / "OPS.zip", confluence_files())))
    items = {i.path: i for i in reader.items()}
    assert list(items) == [
        "No crumbs & more.html", "Ops Home/Runbooks/Disk full - cleanup.html", "Ops Home.html",
        "Ops Home/Runbooks.html", "Ops Home/Runbooks/Disk full - cleanup/301.txt",
        "Ops Home/Runbooks/Disk full - cleanup/302.png"]
    assert items["Ops Home/Runbooks/Disk full - cleanup.html"].meta == {
        "confluence_page_id": "300", "title": "Disk full / cleanup"}
    assert items["Ops Home/Runbooks/Disk full - cleanup/301.txt"].meta["confluence_page_id"] == "300"
    assert items["Ops Home/Runbooks/Disk full - cleanup/301.txt"].read() == b"du -sh /var/*"
    assert items["No crumbs & more.html"].meta == {"confluence_page_id": "400", "title": "No crumbs & more"}


def test_confluence_versions_change_only_with_the_entry(tmp_path: Path) -> None:
    files = confluence_files()
    first = {i.path: i.version for i in ConfluenceExportReader(str(make_zip(tmp_path / "1.zip", files))).items()}
    files["OPS/Runbooks_200.html"] = files["OPS/Runbooks_200.html"].replace(b"About", b"All about")
    second = {i.path: i.version for i in ConfluenceExportReader(str(make_zip(tmp_path / "2.zip", files))).items()}
    assert [p for p in first if first[p] != second[p]] == ["Ops Home/Runbooks.html"]


def test_include_and_exclude_globs_on_the_path(tmp_path: Path) -> None:
    zip_path = make_zip(tmp_path / "Export.zip", notion_files())
    reader = build_reader("notion-export", str(zip_path), {"include": ["Handbook/*"], "exclude": ["*.png"]},
                          cache_dir=tmp_path)
    assert [i.path for i in reader.items()] == [
        "Handbook/Onboarding.md", "Handbook/Onboarding/checklist.txt", "Handbook/Tasks.csv",
        "Handbook/Tasks/Write docs.md"]
    with pytest.raises(SourceError, match="unknown option space"):
        build_reader("confluence-export", str(zip_path), {"space": "OPS"}, cache_dir=tmp_path)


@pytest.mark.parametrize("kind", ["notion-export", "confluence-export"])
def test_a_missing_file_or_not_a_zip_or_not_an_export_is_one_line_naming_it(tmp_path: Path, kind: str) -> None:
    def error(location: Path) -> str:
        with pytest.raises(SourceError) as caught:
            list(build_reader(kind, str(location), {}, cache_dir=tmp_path).items())
        assert "\n" not in str(caught.value) and str(location) in str(caught.value)
        return str(caught.value)

    assert "no such file" in error(tmp_path / "gone.zip")
    (tmp_path / "notes.zip").write_text("not a zip", encoding="utf-8")
    assert "not a zip file" in error(tmp_path / "notes.zip")
    other = confluence_files() if kind == "notion-export" else notion_files()
    assert "not a " in error(make_zip(tmp_path / "other.zip", other))
    if kind == "notion-export":
        parts = make_zip(tmp_path / "Export-1.zip", {"Export-1-Part-1.zip": (tmp_path / "other.zip").read_bytes()})
        assert "holds zips, not pages; give the .zip inside it" in error(parts)


def test_a_damaged_deflated_entry_and_a_replaced_zip_fail_on_read_naming_the_item(tmp_path: Path) -> None:
    zip_path = make_zip(tmp_path / "Export.zip", notion_files())
    items = {i.path: i for i in NotionExportReader(str(zip_path)).items()}
    corrupt(zip_path, f"Handbook {A}.md")
    with pytest.raises(SourceError, match=r"Handbook.md: entry Handbook .* cannot be read"):
        items["Handbook.md"].read()
    reader = NotionExportReader(str(make_zip(tmp_path / "Other.zip", notion_files())))
    items = {i.path: i for i in reader.items()}
    files = notion_files()
    files[f"Handbook {A}.md"] = b"# Handbook\n\nRewritten."
    del files[f"Handbook {A}/Tasks {C}.csv"]
    make_zip(tmp_path / "Other.zip", files)
    with pytest.raises(SourceError, match="Handbook.md: changed in Other.zip since it was listed"):
        items["Handbook.md"].read()
    with pytest.raises(SourceError, match="Handbook/Tasks.csv: no longer in Other.zip"):
        items["Handbook/Tasks.csv"].read()
    assert items["Notes.md"].read() == b"# Notes one"


@pytest.mark.milvus
def test_a_notion_export_kept_in_sync_with_a_knowledge_base(tmp_path: Path, local_embedder: Any,
                                                            milvus: Any) -> None:
    """A real sync of two exports in turn: the second's unchanged pages are skipped, the changed one replaced and
    the page gone from it deleted."""
    wb = make_workbench(tmp_path / "kb", local_embedder)
    try:
        files = {k: v for k, v in notion_files().items() if not k.endswith(".png")}
        zip_path = make_zip(tmp_path / "Export.zip", files)
        book = SourceBook(MemoryDocument(), FileLock(None), None)
        source = book.add(Source("handbook", "biz", "notion-export", str(zip_path), "handbook"))

        def run() -> dict[str, Any]:
            reader = build_reader("notion-export", str(zip_path), {}, cache_dir=tmp_path)
            return sync(book.get(source.name), reader, wb.ingestor, book, max_delete_share=1.0).to_dict()

        first = run()
        assert (first["added"], first["failed"]) == (7, 0), first["failures"]
        files[f"Handbook {A}/Tasks {C}/Write docs {D}.md"] = b"# Write docs\n\nNow with text."
        del files["Notes 44444444444444444444444444444444.md"]
        make_zip(zip_path, files)
        second = run()
        assert second["changes"] == {"added": [], "replaced": ["handbook/Handbook/Tasks/Write docs.md"],
                                     "deleted": ["handbook/Notes 44444444444444444444444444444444.md"]}
        assert second["unchanged"] == 5
    finally:
        wb.close()


@pytest.mark.milvus
def test_a_confluence_export_is_indexed_under_its_breadcrumbs(tmp_path: Path, local_embedder: Any,
                                                              milvus: Any) -> None:
    wb = make_workbench(tmp_path / "kb", local_embedder)
    try:
        zip_path = make_zip(tmp_path / "OPS.zip", confluence_files())
        book = SourceBook(MemoryDocument(), FileLock(None), None)
        source = book.add(Source("ops", "biz", "confluence-export", str(zip_path), "ops"))
        reader = build_reader("confluence-export", str(zip_path), {"exclude": ["*.png"]}, cache_dir=tmp_path)
        result = sync(book.get(source.name), reader, wb.ingestor, book, max_delete_share=1.0).to_dict()
        assert (result["added"], result["failed"]) == (5, 0), result["failures"]
        assert "ops/Ops Home/Runbooks/Disk full - cleanup.html" in [d.doc_id for d in wb.store.list_documents()]
        assert book.get("ops").indexed["Ops Home/Runbooks.html"]["meta"] == {"confluence_page_id": "200",
                                                                              "title": "Runbooks"}
    finally:
        wb.close()


def test_entries_outside_the_export_hidden_ones_and_huge_ones_are_not_read(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    files = {f"Page {A}.md": b"# Page", f"../Escape {B}.md": b"out", f"/abs/Root {C}.md": b"root",
             f"__MACOSX/._Page {A}.md": b"resource fork", f".hidden {D}.md": b"hidden"}
    reader = NotionExportReader(str(make_zip(tmp_path / "Export.zip", files)))
    [item] = reader.items()
    assert item.path == "Page.md"
    monkeypatch.setattr("rag_core.sources.exports.MAX_ENTRY_BYTES", 3)
    with pytest.raises(SourceError, match="Page.md: 0 MB unpacked, over the 0 MB"):
        item.read()
