"""`chunk` and `search` on the new formats: every chunk and hit shows where it is (page, slide, sheet and row), OCR'd
pages are named, and OCR draws its progress."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core.cli import main
from rag_core.cli.search import _print_result
from rag_core.loaders import ocr_available
from tests.helpers import indexed_workbench
from tests.loaders.samples import (
    CJK_FONT,
    LAUGHS,
    deck,
    mixed_pdf,
    patch_package,
    png_header,
    render_page,
    workbook,
    zip_bomb,
)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cli-formats")
    (folder / "alerts.xlsx").write_bytes(workbook())
    (folder / "incident.pptx").write_bytes(deck())
    return folder


def test_chunk_shows_sheets_rows_and_the_qa_note(files: Path, capsys) -> None:
    code, out, _ = run(capsys, "chunk", str(files / "alerts.xlsx"), "--max-size", "300")
    assert code == 0
    assert "(sheet Alerts, rows 1–5) Alerts" in out
    assert "(sheet FAQ, row 3) FAQ > Q: How do I rotate the API keys?" in out
    assert "note: Q&A sheet: FAQ (问题 / 答案)" in out and out.endswith("3 chunks from 496 characters\n")
    code, out, _ = run(capsys, "chunk", str(files / "incident.pptx"), "--json")
    data = json.loads(out)
    assert [c["location"]["label"] for c in data["chunks"]] == ["slide 1", "slide 2", "slide 3"]
    assert data["encoding"] == "pptx" and data["notes"] == [] and data["ocr_pages"] == []


@pytest.mark.slow  # runs OCR
@pytest.mark.skipif(not (ocr_available() and CJK_FONT.is_file()), reason='needs the OCR extra (pip install ".[ocr]") '
                    "and the Noto CJK font")
def test_chunk_names_the_ocrd_pages_and_draws_the_ocr_bar(tmp_path: Path, capsys) -> None:
    scan = render_page(("Rotate the TLS certificates every 90 days", "证书每九十天轮换一次"), (900, 240), 30)
    path = tmp_path / "mixed.pdf"
    path.write_bytes(mixed_pdf("Page one has a text layer.", scan))
    code, out, err = run(capsys, "chunk", str(path))
    assert code == 0 and "(pp. 1–2, OCR)" in out and "note: OCR'd page 2" in out
    assert "OCR page 1/1" in err and "OCR done, 1 page" in err


@pytest.mark.milvus
def test_search_shows_each_hits_location_and_citation(files: Path, tmp_path: Path, local_embedder, capsys) -> None:
    wb = indexed_workbench(tmp_path / "data", local_embedder, [files])  # one Milvus Lite start, not one per command
    try:
        _print_result(wb.retriever.lookup("rollback timeline", return_n=2))  # what `search` prints
        out = capsys.readouterr().out
        top = out.splitlines()[0]
        assert "incident.pptx#chunk-1" in top and top.endswith("(slide 2)"), out
        assert "- [incident.pptx#chunk-1] incident.pptx slide 2: " in out
        result = wb.retriever.lookup("How do I rotate the API keys", return_n=1).to_dict()  # `search --json`
    finally:
        wb.close()
    assert result["evidence"][0]["cited_as"] == "alerts.xlsx sheet FAQ, row 3"
    assert result["raw_hits"][0]["location"] == "sheet FAQ, row 3"
    assert result["raw_hits"][0]["cited_as"] == "alerts.xlsx sheet FAQ, row 3"


@pytest.mark.milvus
def test_ingest_refuses_bombs_and_oversized_files_and_indexes_none_of_them(tmp_path: Path, capsys) -> None:
    """`ingest` on a folder of bombs and junk next to one good file: each bad file fails in one line naming it and
    what is wrong, the exit code says some failed, and only the good file is in the knowledge base."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nThe payment gateway restarts its workers.\n", encoding="utf-8")
    bad = {
        "zipbomb.xlsx": (zip_bomb(workbook(), "xl/worksheets/sheet9.xml"), "too_much_text",
                         "may be a decompression bomb"),
        "laughs.xlsx": (patch_package(workbook(), add={"xl/sharedStrings.xml": LAUGHS}), "undecodable",
                        "declares an XML document type (<!DOCTYPE>), which an Excel workbook never does"),
        "zipbomb.pptx": (zip_bomb(deck(), "ppt/slides/slide9.xml"), "too_much_text", "may be a decompression bomb"),
        "wide.csv": (b"h," * 20_000 + b"\n", "too_much_text", "row 1 has values in 20,000 columns"),
        "long.csv": (b"Alert,Notes\nHighCPU," + b"x" * (2 * 1024 * 1024) + b"\n", "too_much_text",
                     "line 2 is 2,097,160 characters long, more than the 1,000,000"),
        "script.html": (b"<html><head><script>" + b"var x = 1;" * 200_000 + b"</script></head><body>"
                        b"<div id='root'></div></body></html>", "empty", "99% script"),
        "fake.png": (b"just text, renamed", "unsupported", "is not a PNG image"),
        "huge.png": (png_header(100_000, 100_000), "too_large", "100,000 x 100,000 pixels"),
        "big.csv": (b"Alert,Notes\n" + b"HighCPU,restart the workers\n" * 150_000, "too_large",
                    "loader.max-file-mb"),
    }
    for name, (data, _, _) in bad.items():
        (folder / name).write_bytes(data)
    data_dir = str(tmp_path / "data")
    code, out, _ = run(capsys, "--data-dir", data_dir, "--set", "loader.max-file-mb=4", "--set",
                       "loader.max-text-chars=1000", "ingest", str(folder), "--quiet")
    assert code == 1
    lines = {Path(line.split()[1]).name: line for line in out.splitlines()[:-1]}  # a failed file: by its path
    assert lines.pop("good.md").startswith("added     good.md  (1 chunks, ")
    assert set(lines) == set(bad)
    for name, (_, _, fragment) in bad.items():
        status, path, rest = lines[name].split(maxsplit=2)
        assert (status, path) == ("failed", str(folder / name)) and fragment in rest, lines[name]
        assert rest.startswith("(") and f"{name}: " in rest
    assert out.splitlines()[-1] == f"1 added, 0 replaced, 0 unchanged, {len(bad)} failed, 0 skipped"
    code, out, _ = run(capsys, "--data-dir", data_dir, "--set", "loader.max-file-mb=4", "--set",
                       "loader.max-text-chars=1000", "ingest", str(folder), "--json", "--quiet")
    codes = {Path(r["path"]).name: (r["status"], r["error_code"]) for r in json.loads(out)}
    assert codes == {"good.md": ("unchanged", ""), **{n: ("failed", c) for n, (_, c, _) in bad.items()}}
    code, out, _ = run(capsys, "--data-dir", data_dir, "docs", "--json")
    assert code == 0 and [d["doc_id"] for d in json.loads(out)] == ["good.md"]  # nothing of the bombs indexed


@pytest.mark.slow  # runs OCR
@pytest.mark.milvus
@pytest.mark.skipif(not (ocr_available() and CJK_FONT.is_file()), reason='needs the OCR extra (pip install ".[ocr]") '
                    "and the Noto CJK font")
def test_ingest_draws_the_ocr_progress_and_names_the_ocrd_page(tmp_path: Path, capsys) -> None:
    scan = render_page(("Rotate the TLS certificates every 90 days", "证书每九十天轮换一次"), (900, 240), 30)
    path = tmp_path / "mixed.pdf"
    path.write_bytes(mixed_pdf("Page one has a text layer.", scan))
    code, out, err = run(capsys, "--data-dir", str(tmp_path / "data"), "ingest", str(path))
    assert code == 0 and out.startswith("added     mixed.pdf  (1 chunks, ")
    assert "          note: OCR'd page 2\n" in out
    assert "] OCR page 1/1 " in err and "] OCR done, 1 page " in err  # the ingest bar, page by page


@pytest.mark.milvus
def test_kb_copy_rereads_the_new_formats_from_the_kept_originals(files: Path, tmp_path: Path, capsys) -> None:
    data = str(tmp_path / "data")
    assert run(capsys, "--data-dir", data, "ingest", str(files), "--quiet")[0] == 0
    code, out, _ = run(capsys, "--data-dir", data, "kb", "copy", "biz", "small", "--max-size", "300",
                       "--overlap", "30", "--json")
    assert code == 0 and json.loads(out)["counts"] == {"added": 2, "failed": 0}, out
    reports = {r["doc_id"]: r for r in json.loads(out)["reports"]}
    assert reports["alerts.xlsx"]["notes"] == ["Q&A sheet: FAQ (问题 / 答案)"]  # read again, not copied as text
    code, out, _ = run(capsys, "--data-dir", data, "--kb", "small", "search", "rollback timeline", "--json")
    top = json.loads(out)["evidence"][0]
    assert (top["doc_id"], top["location"], top["cited_as"]) == ("incident.pptx", "slide 2", "incident.pptx slide 2")
    code, out, _ = run(capsys, "--data-dir", data, "--kb", "small", "search", "rotate the API keys", "--json")
    top = json.loads(out)["evidence"][0]
    assert (top["doc_id"], top["location"]) == ("alerts.xlsx", "sheet FAQ, row 3")
    code, out, _ = run(capsys, "--data-dir", data, "--kb", "small", "reindex", "--json")
    assert code == 0 and {r["doc_id"]: r["status"] for r in json.loads(out)} == {
        "alerts.xlsx": "replaced", "incident.pptx": "replaced"}, out
