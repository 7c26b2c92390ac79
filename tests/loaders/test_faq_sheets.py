"""FAQ sheets under the names people give their columns (issue 39): `desc`/`answer`, `Q_EN`/`A_EN`, `问题`/`答案`,
`标准问题`/`答复`, `Query (EN)`/` Response ` and a bilingual `q_en`/`q_zh`/`a_en`/`a_zh`, as .xlsx and .csv, are read as
question-and-answer pairs; a bilingual row is one pair searched by both its questions; in Milvus Lite with the local
embedder each question finds its own row first; a sheet of titles and prose is no FAQ."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rag_core.loaders import load_bytes
from rag_core.records import Document
from tests.helpers import make_workbench
from tests.loaders.checks import chunks_of
from tests.loaders.faq_samples import (
    ANSWER_OF,
    PAIRS,
    QUESTIONS_OF,
    VARIANTS,
    faq_csv,
    faq_xlsx,
    field,
    titled_prose_xlsx,
)

FORMATS = {"xlsx": faq_xlsx, "csv": faq_csv}
SOME = PAIRS[:4]


def loaded(variant: str, ext: str, pairs: list[tuple[str, str, str, str]] = SOME) -> Document:
    return load_bytes(FORMATS[ext](variant, pairs), f"{variant}.{ext}")


@pytest.mark.parametrize("ext", sorted(FORMATS))
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_header_variant_is_read_as_questions_and_answers(variant: str, ext: str) -> None:
    doc = loaded(variant, ext)
    assert len(doc.notes) == 1 and doc.notes[0].startswith("Q&A "), doc.notes
    asked = [" / ".join(field(p, f) for f in QUESTIONS_OF[variant]) for p in SOME]
    assert [p.question for p in doc.places if p.question] == asked
    chunks = chunks_of(doc)
    pairs = [c for c in chunks if c.search_text]
    assert [c.search_text for c in pairs] == asked  # one chunk per row, searched by its question(s) alone
    for row, (chunk, pair) in enumerate(zip(pairs, SOME), start=2):
        heading = "# Q: " + " / ".join(field(pair, f) for f in QUESTIONS_OF[variant])
        assert [line for line in chunk.text.splitlines() if "# Q: " in line][0].endswith(heading)
        assert field(pair, ANSWER_OF[variant]) in chunk.text
        # its row (the first pair's chunk also holds the sheet's heading, placed at the header row)
        assert chunk.location is not None and chunk.location.last == row and chunk.location.first in (1, row)


def test_a_bilingual_row_holds_both_answers_and_names_its_columns() -> None:
    doc = loaded("bilingual", "xlsx")
    assert doc.notes == ("Q&A sheet: FAQ (q_en, q_zh / a_en, a_zh)",)
    first = [c for c in chunks_of(doc) if c.search_text][0]
    q_en, q_zh, a_en, a_zh = SOME[0]
    assert first.text.endswith(f"## Q: {q_en} / {q_zh}\nA: {a_en}\nA: {a_zh}")


def test_a_sheet_of_titles_and_prose_is_no_faq() -> None:
    doc = load_bytes(titled_prose_xlsx(), "incidents.xlsx")
    assert doc.notes == () and not any(p.question for p in doc.places)
    assert all(not c.search_text for c in chunks_of(doc))
    assert "Title: Disk full on the database host · Body: The data volume" in doc.text  # rows are records
    api = b"Endpoint,Description,Response\n/v1/search,Search the knowledge base,200 with hits\n"
    assert load_bytes(api, "api.csv").notes == ()  # a description and a response: an API table, not an FAQ


def test_a_title_is_the_question_only_when_no_column_is_named_one() -> None:
    data = b"title,question,answer\nDisks,Why is the disk full?,Old WAL files.\n"
    [place] = [p for p in load_bytes(data, "t.csv").places if p.question]
    assert place.question == "Why is the disk full?"
    data = b"Title,Reply\nDisk full,Move old WAL files off the volume.\n"
    [place] = [p for p in load_bytes(data, "t.csv").places if p.question]
    assert place.question == "Disk full"


@pytest.mark.milvus
def test_each_question_searches_to_its_own_answer(tmp_path: Path, local_embedder: Any) -> None:
    """Every variant in one knowledge base, each file its own three topics (so a question has one right row);
    every question (both of a bilingual row) finds its row first, the row alone."""
    wb = make_workbench(tmp_path / "data", embedder=local_embedder)
    try:
        uploads, expected = [], []
        for i, variant in enumerate(sorted(VARIANTS)):
            pairs = [PAIRS[(i * 3 + k) % len(PAIRS)] for k in range(3)]
            ext = "csv" if i % 2 else "xlsx"
            uploads.append((f"{variant}.{ext}", FORMATS[ext](variant, pairs)))
            for row, pair in enumerate(pairs, start=2):
                for question in QUESTIONS_OF[variant]:
                    expected.append((f"{variant}.{ext}", field(pair, question), row, field(pair, ANSWER_OF[variant])))
        reports = wb.ingestor.ingest_uploads(uploads)
        assert [r.status for r in reports] == ["added"] * len(uploads), reports
        for doc_id, question, row, answer in expected:
            top = wb.retriever.lookup(question, return_n=1, filters={"doc_id": [doc_id]}).to_dict()["evidence"][0]
            assert answer in top["content"], (doc_id, question, top["content"])
            # "row 3", "sheet FAQ, row 3"; the first pair of a sheet "rows 1–2" (with the sheet's heading)
            assert top["location"].rsplit(" ", 1)[-1] in (str(row), f"1–{row}"), (question, top["location"])
    finally:
        wb.close()
