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
from tests.loaders.samples import CJK_FONT, deck, mixed_pdf, render_page, workbook


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
