"""Loaders: BEIR slices read from ../shared/eval, tiny BEIR folders, the hand-written JSONL/CSV format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core.errors import EvaluationError
from rag_core.evaluation.datasets import (
    SAMPLE_KB,
    answers_located,
    beir_document,
    bundled_sets,
    load_beir,
    load_set,
    load_user_set,
    parse_user_set,
)
from rag_core.evaluation.runner import Grid
from tests.evaluation.conftest import needs_shared, write_beir


def test_cmrc_slice_shifts_answer_offsets_past_the_prepended_title() -> None:
    folder = needs_shared("cmrc2018")
    s = load_beir(folder, split="dev", limit=5, corpus_sample=10)
    assert [q.query_id for q in s.queries] == ["DEV_0_QUERY_0", "DEV_0_QUERY_1", "DEV_0_QUERY_2",
                                               "DEV_1_QUERY_0", "DEV_1_QUERY_1"]
    docs = {d.doc_id: d for d in s.documents}
    assert {"DEV_0", "DEV_1"} <= docs.keys() and len(docs) == 12
    assert s.info["corpus"]["sliced"] and s.info["corpus"]["total_documents"] == 1104
    # DEV_0's text does not start with its title "战国无双3": the title is prepended, offsets shift by 7
    assert docs["DEV_0"].text.startswith("战国无双3\n\n《战国无双3》")
    first = s.queries[0].answers[0]
    assert (first.doc_id, first.text, first.start) == ("DEV_0", "光荣和ω-force", 11 + len("战国无双3\n\n"))
    for q in s.queries:
        for a in q.answers:
            assert docs[a.doc_id].text[a.start:a.end] == a.text
    assert s.queries[0].relevant == {"DEV_0": 1}


def test_covidqa_titles_already_in_the_text_are_not_repeated() -> None:
    folder = needs_shared("covidqa")
    s = load_beir(folder, limit=2, corpus_sample=0)
    docs = {d.doc_id: d for d in s.documents}
    assert set(docs) == {"630"}
    raw = json.loads((folder / "corpus.jsonl").open(encoding="utf-8").readline())
    assert docs["630"].text == raw["text"]
    a = s.queries[0].answers[0]
    assert a.start == 370 and docs["630"].text[a.start:a.end] == a.text


def test_scifact_slice_is_deterministic_and_holds_every_relevant_document() -> None:
    folder = needs_shared("scifact")
    one = load_beir(folder, limit=3)
    two = load_beir(folder, limit=3)
    assert one == two
    ids = {d.doc_id for d in one.documents}
    assert all(set(q.relevant) <= ids for q in one.queries)
    assert len(ids) == 100 + len({d for q in one.queries for d in q.relevant})  # default sample: max(100, 10N)
    assert one.info["split"] == "test" and not one.has_answers


def test_bundled_sets_include_the_sample_and_the_shared_sets() -> None:
    sets = bundled_sets()
    assert sets["sample"].name == "kb_queries.jsonl"
    needs_shared("scifact")
    assert {"scifact", "cmrc2018", "covidqa"} <= sets.keys()


def test_beir_folder_errors_name_file_and_line(tmp_path: Path) -> None:
    corpus = [{"_id": "d1", "title": "T", "text": "alpha beta"}, {"_id": "d2", "title": "", "text": "gamma"}]
    queries = [{"_id": "q1", "text": "alpha?", "metadata": {"answers": [{"doc_id": "d1", "text": "beta", "start": 6}]}}]
    good = write_beir(tmp_path / "good", corpus, queries, [("q1", "d1", 1), ("q1", "d2", 0)])
    s = load_beir(good)
    assert s.queries[0].relevant == {"d1": 1}  # score 0 is not relevant
    assert s.queries[0].answers[0].start == 6 + len("T\n\n")
    assert beir_document(corpus[1]) [1] == 0

    bad_offset = write_beir(tmp_path / "offset", corpus,
                            [{"_id": "q1", "text": "a", "metadata": {"answers": [{"doc_id": "d1", "text": "beta", "start": 2}]}}],
                            [("q1", "d1", 1)])
    with pytest.raises(EvaluationError, match="not at offset 2"):
        load_beir(bad_offset)
    missing_doc = write_beir(tmp_path / "missing", corpus, queries, [("q1", "d9", 1)])
    with pytest.raises(EvaluationError, match="missing from corpus.jsonl: d9"):
        load_beir(missing_doc)
    broken = write_beir(tmp_path / "broken", corpus, queries, [("q1", "d1", 1)])
    with (broken / "corpus.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    with pytest.raises(EvaluationError, match=r"corpus.jsonl, line 3: not valid JSON"):
        load_beir(broken)
    with pytest.raises(EvaluationError, match="no split 'dev'"):
        load_beir(good, split="dev")
    with pytest.raises(EvaluationError, match="not a BEIR-layout"):
        load_beir(tmp_path)
    no_judged = write_beir(tmp_path / "nojudged", corpus, queries, [("q7", "d1", 1)])
    with pytest.raises(EvaluationError, match="no query of queries.jsonl has judgements"):
        load_beir(no_judged)


def test_sample_set_loads_with_its_knowledge_base() -> None:
    s = load_set("sample")
    assert len(s.queries) == 36 and len(s.documents) == 10
    assert s.queries[0].answers[0].start is None and s.queries[0].relevant == {"runbooks/cpu_high.md": 1}
    assert answers_located(s) == []
    assert load_set("sample", limit=4).queries == s.queries[:4]


def test_user_jsonl_and_csv_formats(tmp_path: Path) -> None:
    jsonl = ('{"query": "disk full?", "relevant": ["runbooks/disk_full.md"], "answer": "Never delete"}\n\n'
             '{"id": "x", "query": "cpu", "relevant": ["runbooks/cpu_high.md", "policies/oncall_zh.md"]}\n')
    qs = parse_user_set(jsonl, "set.jsonl")
    assert [q.query_id for q in qs] == ["q1", "x"]
    assert qs[1].relevant == {"runbooks/cpu_high.md": 1, "policies/oncall_zh.md": 1} and qs[1].answers == ()
    csv_text = ("query,relevant,answer\n"
                "\"disk full, what now?\",runbooks/disk_full.md; runbooks/cpu_high.md,Never delete\n"
                "cpu,runbooks/cpu_high.md,\n")
    qs = parse_user_set(csv_text.encode("utf-8-sig"), "set.csv")
    assert qs[0].text == "disk full, what now?"
    assert list(qs[0].relevant) == ["runbooks/disk_full.md", "runbooks/cpu_high.md"]
    assert [a.text for a in qs[0].answers] == ["Never delete"] and qs[1].answers == ()
    path = tmp_path / "mine.csv"
    path.write_text(csv_text, encoding="utf-8")
    s = load_user_set(path, corpus=SAMPLE_KB)
    assert s.name == "mine" and len(s.documents) == 10 and answers_located(s) == []


@pytest.mark.parametrize(("text", "name", "message"), [
    ('{"query": "a", "relevant": ["d"]}\n{"query": "b", "relevant": ["d"]\n', "s.jsonl", r"s.jsonl, line 2: not valid JSON"),
    ('{"query": "a"}\n', "s.jsonl", r"line 1: `relevant` is missing"),
    ('{"query": "a", "relevant": "d.md"}\n', "s.jsonl", None),  # one string is accepted as one id
    ('{"query": "a", "relevant": [1, 2]}\n', "s.jsonl", r"`relevant` must be a list of strings"),
    ('{"query": " ", "relevant": ["d"]}\n', "s.jsonl", r"`query` is missing or empty"),
    ('{"query": "a", "relevant": ["d"], "answr": "x"}\n', "s.jsonl", r"unknown field\(s\) answr"),
    ('["a", "b"]\n', "s.jsonl", r"expected a JSON object"),
    ('{"id": "1", "query": "a", "relevant": ["d"]}\n{"id": "1", "query": "b", "relevant": ["d"]}\n', "s.jsonl",
     r"query id '1' appears twice"),
    ("question,docs\nx,y\n", "s.csv", r"header must name the columns query and relevant"),
    ("query,relevant\nx,\n", "s.csv", r"s.csv, line 2: `relevant` is missing"),
    ("query,relevant\nx,a,b\n", "s.csv", r"more values than columns"),
    ("\n\n", "s.jsonl", r"contains no queries"),
    ("query,relevant\n", "s.txt", r"use a .jsonl or .csv file"),
])
def test_malformed_user_sets_say_what_and_where(text: str, name: str, message: str | None) -> None:
    if message is None:
        assert parse_user_set(text, name)[0].relevant == {"d.md": 1}
        return
    with pytest.raises(EvaluationError, match=message):
        parse_user_set(text, name)


def test_user_set_needs_a_corpus_or_live(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"query": "a", "relevant": ["d.md"]}\n', encoding="utf-8")
    with pytest.raises(EvaluationError, match="--corpus FOLDER"):
        load_set(str(path))
    assert load_set(str(path), live=True).documents is None
    with pytest.raises(EvaluationError, match="No evaluation set 'nope'"):
        load_set("nope")
    assert "relevant document(s) not in the corpus: d.md" in answers_located(
        load_set(str(path), corpus=str(SAMPLE_KB)))[0]


def test_grid_skips_invalid_points_and_does_not_multiply_inapplicable_parameters() -> None:
    grid = Grid(mode=("dense", "hybrid"), fusion=("rrf", "weighted"), rrf_k=(10, 60), retrieve_k=(5, 20),
                return_n=(5, 10), chunk_size=(800,), overlap=(100,))
    points, skipped = grid.points()
    # dense: fusion/rrf_k do not apply -> 1 x (k=5: n=5 | k=20: n=5,10) = 3 points
    # hybrid rrf: 2 rrf_k x 3 = 6; hybrid weighted (rrf_k n/a): 3  -> 12
    assert len(points) == 12
    assert skipped == ["return-n 10 > retrieve-k 5"]
    dense = [p for p in points if p.mode == "dense"]
    assert {p.to_dict()["fusion"] for p in dense} == {None}
    assert len({p for p in points}) == len(points)
    assert grid.varying() == ["mode", "fusion", "rrf_k", "retrieve_k", "return_n"]
    with pytest.raises(EvaluationError, match="No valid parameter combination"):
        Grid(chunk_size=(100,), overlap=(100,)).points()
    with pytest.raises(EvaluationError, match="Unknown search mode"):
        Grid(mode=("vector",)).points()


def test_a_judged_query_without_text_is_skipped_with_a_warning(tmp_path) -> None:
    import json

    from rag_core.evaluation.datasets import answers_located, load_beir

    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "title": "", "text": "some text"}) + "\n")
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "some"}) + "\n"
                                            + json.dumps({"_id": "q2", "text": " "}) + "\n")
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td1\t1\n")
    eval_set = load_beir(tmp_path)
    assert [q.query_id for q in eval_set.queries] == ["q1"]
    assert answers_located(eval_set) == ["1 judged query without text skipped: q2"]
