"""FAQ sheets under the column names people give them (issue 39, part 6): before and after, in one run.

Generated FAQ sheets (tests/loaders/faq_samples.py: twelve support questions, each with its answer, in English and
Chinese) under seven header variants (`Question`/`Answer`, `desc`/`answer`, `Q_EN`/`A_EN`, `Query (EN)`/` Response `,
`问题`/`答案`, `标准问题`/`答复`, and bilingual `q_en`/`q_zh`/`a_en`/`a_zh`), each as .xlsx and .csv, are ingested
through `Ingestor` (local USE embedder, chunks 800/100, Milvus Lite) twice: with the header recognition before
issue 39 (`legacy_qa_columns`, the exact names of that release, patched in for the "before" run) and with
today's (`sheets.qa_columns`). Per file:
- rows read as Q&A: rows whose place carries a question (searched by it alone) of the data rows;
- recall@1: every question of the sheet (both of a bilingual row) looked up in its own file (`filters` on its
  doc_id, the default hybrid lookup): the first evidence block is its row alone and holds its answer. A sheet not
  read as Q&A packs its rows into shared chunks (records), so a hit there holds several pairs: the answer is in it
  (`answer in first`, also given) but it is not the row a citation should name; `dense recall@1` is the same with
  the dense channel alone (a bilingual row's one vector is of both its questions: does each still find it?).

`measure_faq(quick)` returns the figures; bench/formats.py puts them in its run.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any
from unittest import mock

from rag_core.loaders import sheets
from rag_core.loaders.sheets import QaColumns
from rag_core.records import SearchOptions
from tests.loaders.faq_samples import ANSWER_OF, PAIRS, QUESTIONS_OF, VARIANTS, faq_csv, faq_xlsx, field

# The names recognised before issue 39: exact (lower-cased, trimmed) header text, the first question and answer.
LEGACY_QUESTION_NAMES = frozenset({"question", "questions", "q", "query", "faq", "问题", "问", "提问", "问句",
                                   "常见问题", "题目", "疑问", "問題", "提問"})
LEGACY_ANSWER_NAMES = frozenset({"answer", "answers", "a", "reply", "response", "答案", "答", "回答", "解答", "答复",
                                 "回复", "答覆", "回覆"})
DENSE = SearchOptions(mode="dense")
FORMATS: dict[str, Callable[[str, list[tuple[str, str, str, str]]], bytes]] = {"xlsx": faq_xlsx, "csv": faq_csv}


def legacy_qa_columns(headers: list[str], chosen: tuple[str, str] | None) -> QaColumns | None:
    """The Q&A columns as the release before issue 39 found them (sheets._qa_columns of that release)."""
    names = [h.strip().strip(":：").strip().lower() for h in headers]
    if chosen is not None and chosen[0] in names and chosen[1] in names:
        return QaColumns((names.index(chosen[0]),), (names.index(chosen[1]),))
    question = next((i for i, n in enumerate(names) if n in LEGACY_QUESTION_NAMES), None)
    answer = next((i for i, n in enumerate(names) if n in LEGACY_ANSWER_NAMES), None)
    return QaColumns((question,), (answer,)) if question is not None and answer is not None else None


def _files(pairs: list[tuple[str, str, str, str]]) -> list[tuple[str, str, bytes]]:
    return [(variant, ext, make(variant, pairs)) for variant in VARIANTS for ext, make in FORMATS.items()]


def _run(mode: str, files: list[tuple[str, str, bytes]], pairs: list[tuple[str, str, str, str]],
         embedder: Any, folder: Path) -> tuple[list[dict[str, Any]], Any]:
    from tests.helpers import make_workbench

    patch: AbstractContextManager[Any] = (mock.patch.object(sheets, "qa_columns", legacy_qa_columns)
                                          if mode == "before" else nullcontext())
    wb = make_workbench(folder / mode, embedder=embedder)
    try:
        with patch:
            reports = wb.ingestor.ingest_uploads([(f"{v}.{ext}", data) for v, ext, data in files])
        if any(r.status != "added" for r in reports):
            raise RuntimeError(f"{mode}: {[r.error for r in reports if r.status != 'added']}")
        rows = []
        for variant, ext, _ in files:
            doc_id = f"{variant}.{ext}"
            chunks = wb.store.get_chunks(doc_id)
            searched = {str((c.metadata or {}).get("searchText") or "") for c in chunks} - {""}
            found = alone = dense = asked = 0
            for number, pair in enumerate(pairs, start=2):
                answer = field(pair, ANSWER_OF[variant])
                for question in QUESTIONS_OF[variant]:
                    asked += 1
                    for search in (SearchOptions(), DENSE):
                        evidence = wb.retriever.lookup(field(pair, question), return_n=1, search=search,
                                                       filters={"doc_id": [doc_id]}).to_dict()["evidence"]
                        first = evidence[0] if evidence else {"content": "", "location": ""}
                        label = str(first.get("location") or "").rsplit(" ", 1)[-1]
                        its_row = answer in first["content"] and label in (str(number), f"1–{number}")
                        if search is DENSE:
                            dense += its_row
                        else:
                            found += answer in first["content"]
                            alone += its_row
            rows.append({"variant": variant, "format": ext, "rows": len(pairs), "qa_rows": len(searched),
                         "questions": asked, "recall_at_1": alone / asked, "answer_in_first": found / asked,
                         "dense_recall_at_1": dense / asked})
        return rows, wb.embedder
    finally:
        wb.close()


def measure_faq(quick: bool = False) -> dict[str, Any]:
    """Rows read as Q&A and recall@1 per header variant and format, before and after (see the module docstring)."""
    pairs = PAIRS[:6] if quick else PAIRS
    files = _files(pairs)
    with tempfile.TemporaryDirectory(prefix="bench-faq-") as tmp:
        after, embedder = _run("after", files, pairs, None, Path(tmp))
        before, _ = _run("before", files, pairs, embedder, Path(tmp))
    rows = []
    for b, a in zip(before, after):
        rows.append({"variant": a["variant"], "format": a["format"], "rows": a["rows"], "questions": a["questions"],
                     "qa_rows_before": b["qa_rows"], "qa_rows_after": a["qa_rows"],
                     "recall_at_1_before": b["recall_at_1"], "recall_at_1_after": a["recall_at_1"],
                     "answer_in_first_before": b["answer_in_first"], "answer_in_first_after": a["answer_in_first"],
                     "dense_recall_at_1_before": b["dense_recall_at_1"],
                     "dense_recall_at_1_after": a["dense_recall_at_1"]})

    def total(key: str) -> float:
        return sum(r[key] * r["questions"] for r in rows) / sum(r["questions"] for r in rows)

    return {"files": rows,
            "sheets_recognised_before": sum(r["qa_rows_before"] == r["rows"] for r in rows),
            "sheets_recognised_after": sum(r["qa_rows_after"] == r["rows"] for r in rows),
            "sheets": len(rows),
            "recall_at_1_before": total("recall_at_1_before"), "recall_at_1_after": total("recall_at_1_after"),
            "answer_in_first_before": total("answer_in_first_before"),
            "answer_in_first_after": total("answer_in_first_after"),
            "dense_recall_at_1_before": total("dense_recall_at_1_before"),
            "dense_recall_at_1_after": total("dense_recall_at_1_after")}


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(measure_faq("--quick" in sys.argv), indent=2, ensure_ascii=False))
