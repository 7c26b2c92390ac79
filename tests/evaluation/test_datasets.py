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
    load_user_set,
    parse_user_set,
)
from rag_core.evaluation.runner import Grid
from rag_core.evaluation.testsets import load_set
from tests.evaluation.conftest import FIXTURES, SPANS, TINY, needs_shared, write_beir


def test_beir_answers_shift_past_a_prepended_title_and_titles_in_the_text_are_not_repeated() -> None:
    s = load_beir(TINY)
    docs = {d.doc_id: d for d in s.documents}
    assert len(docs) == 14 and s.info["split"] == "test" and not s.info["corpus"]["sliced"]
    assert docs["disk"].text.startswith("Disk space runbook\n\nWhen a volume passes 90%")
    assert docs["memory"].text.startswith("Memory leaks in the order service show")  # title already in the text
    assert docs["noise2"].text.startswith("The canteen")  # no title
    first = s.queries[0].answers[0]
    raw = json.loads((TINY / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert (first.doc_id, first.text) == ("disk", "/var/lib/mysql")
    assert first.start == raw["text"].index("/var/lib/mysql") + len("Disk space runbook\n\n")
    for q in s.queries:
        for a in q.answers:
            if a.start is not None:
                assert docs[a.doc_id].text[a.start:a.end] == a.text
    dns = next(q for q in s.queries if q.query_id == "q6")
    assert dns.answers[0].start is None and dns.answers[0].text == "thirty seconds"  # text only: matched verbatim
    assert next(q for q in s.queries if q.query_id == "q8").relevant == {"redis": 1}  # score 0 is not relevant
    assert next(q for q in s.queries if q.query_id == "q1").relevant == {"disk": 2}  # graded
    assert s.info["skipped_queries"] == ["q12"] and answers_located(s) == ["1 judged query without text skipped: q12"]
    assert [q.query_id for q in load_beir(TINY, split="dev").queries] == ["d1", "d2"]


def test_a_limited_slice_is_deterministic_and_holds_every_relevant_document() -> None:
    one = load_beir(TINY, limit=3, corpus_sample=2)
    assert one == load_beir(TINY, limit=3, corpus_sample=2)
    ids = {d.doc_id for d in one.documents}
    assert [q.query_id for q in one.queries] == ["q1", "q2", "q3"]
    assert ids >= {"disk", "cpu", "memory"} and len(ids) == 3 + 2
    assert one.info["corpus"]["sliced"] and one.info["corpus"]["total_documents"] == 14
    assert one.info["queries"] == {"rule": "first", "limit": 3, "chosen": 3, "of": None}


def test_a_seeded_sample_is_reproducible_differs_from_limit_and_the_slice_follows_it() -> None:
    sampled = load_beir(TINY, sample=4, seed=7, corpus_sample=1)
    again = load_beir(TINY, sample=4, seed=7, corpus_sample=1)
    assert sampled == again  # the same seed, the same queries and the same corpus slice
    ids = [q.query_id for q in sampled.queries]
    assert ids != ["q1", "q2", "q3", "q4"]  # not the first four
    assert ids == [q for q in [f"q{i}" for i in range(1, 12)] if q in ids]  # kept in file order
    assert ids != [q.query_id for q in load_beir(TINY, sample=4, seed=8).queries]  # another seed, another sample
    docs = {d.doc_id for d in sampled.documents}
    assert all(set(q.relevant) <= docs for q in sampled.queries) and len(docs) == len(
        {d for q in sampled.queries for d in q.relevant}) + 1
    assert sampled.info["queries"] == {"rule": "sample", "sample": 4, "seed": 7, "chosen": 4, "of": 11}
    assert load_beir(TINY, sample=100).info["queries"]["chosen"] == 11  # more than the set: all of it
    assert load_beir(TINY, sample=3).info["queries"]["seed"] == 0  # the default seed, recorded


def test_sample_and_limit_mistakes_are_clear(tmp_path: Path) -> None:
    with pytest.raises(EvaluationError, match="--limit and --sample exclude each other"):
        load_beir(TINY, limit=2, sample=2)
    with pytest.raises(EvaluationError, match="--seed applies to --sample only"):
        load_beir(TINY, seed=3)
    with pytest.raises(EvaluationError, match="--sample must be at least 1"):
        load_beir(TINY, sample=0)
    path = tmp_path / "q.jsonl"
    path.write_text("".join(f'{{"query": "q {i}", "relevant": ["d.md"]}}\n' for i in range(10)), encoding="utf-8")
    s = load_user_set(path, sample=3, seed=1)
    assert [q.query_id for q in s.queries] == [q.query_id for q in load_user_set(path, sample=3, seed=1).queries]
    assert s.info["queries"]["rule"] == "sample" and len(s.queries) == 3


def test_span_labels_load_and_unusable_labels_are_reported() -> None:
    s = load_beir(SPANS)
    assert s.has_spans and not s.has_answers
    docs = {d.doc_id: d for d in s.documents}
    by_id = {q.query_id: q for q in s.queries}
    timeout = by_id["s1"].spans[0]
    assert docs["gateway"].text[timeout.start:timeout.end].startswith("Each acquirer call has a timeout")
    # an answer entry with start/end and no text is a span too
    refund = by_id["s2"].spans[0]
    assert docs["gateway"].text[refund.start:refund.end] == "one hundred and eighty days" and not by_id["s2"].answers
    assert len(by_id["s8"].spans) == 1  # the span past the end of the document was dropped ...
    warnings = answers_located(s)
    assert any("query s8: span 10-99999 ends after document 'search'" in w for w in warnings)  # ... and reported
    assert any("query s7: a label in metadata.answers has neither answer text nor a span" in w for w in warnings)


def test_labels_under_a_key_the_reader_does_not_read_are_named_never_dropped_silently(tmp_path: Path) -> None:
    corpus = [{"_id": "d1", "title": "", "text": "alpha beta gamma"}]
    spans = {"gold_spans": [{"doc_id": "d1", "start": 0, "end": 5}], "split": "dev"}
    queries = [{"_id": f"q{i}", "text": "alpha?", "metadata": spans} for i in range(3)]
    s = load_beir(write_beir(tmp_path / "gold", corpus, queries, [(f"q{i}", "d1", 1) for i in range(3)]))
    assert not s.has_spans
    [warning] = answers_located(s)
    assert "labels are read from metadata.answers" in warning and "metadata.spans" in warning
    assert "not read: metadata.gold_spans (3 queries)" in warning and "split" not in warning  # a scalar: no label
    # a set whose labels are all read says nothing
    read = [{"_id": "q0", "text": "alpha?", "metadata": {"spans": spans["gold_spans"], "split": "dev"}}]
    assert answers_located(load_beir(write_beir(tmp_path / "read", corpus, read, [("q0", "d1", 1)]))) == []


def test_bundled_sets_include_the_sample_and_every_beir_folder_of_the_eval_dir() -> None:
    sets = bundled_sets(env={"RAG_EVAL_DIR": str(FIXTURES)})
    assert sets["sample"].name == "kb_queries.jsonl"
    assert {"tiny_beir", "span_beir"} <= sets.keys()
    assert load_set("tiny_beir", sample=2, env={"RAG_EVAL_DIR": str(FIXTURES)}).name == "tiny_beir"


def test_the_shared_sets_when_present() -> None:
    folder = needs_shared("cmrc2018")  # optional: the larger sets next to the repository
    s = load_beir(folder, split="dev", sample=5, seed=0, corpus_sample=10)
    docs = {d.doc_id: d for d in s.documents}
    for q in s.queries:
        for a in q.answers:
            assert docs[a.doc_id].text[a.start:a.end] == a.text
    assert s.info["corpus"]["total_documents"] == 1104 and s.info["queries"]["of"] == 3219


def test_beir_folder_errors_name_file_and_line(tmp_path: Path) -> None:
    corpus = [{"_id": "d1", "title": "T", "text": "alpha beta"}, {"_id": "d2", "title": "", "text": "gamma"}]
    queries = [{"_id": "q1", "text": "alpha?", "metadata": {"answers": [{"doc_id": "d1", "text": "beta", "start": 6}]}}]
    good = write_beir(tmp_path / "good", corpus, queries, [("q1", "d1", 1), ("q1", "d2", 0)])
    s = load_beir(good)
    assert s.queries[0].relevant == {"d1": 1}  # score 0 is not relevant
    assert s.queries[0].answers[0].start == 6 + len("T\n\n")
    assert beir_document(corpus[1]) [1] == 0

    bad_offset = write_beir(
        tmp_path / "offset",
        corpus,
        [{"_id": "q1", "text": "a", "metadata": {"answers": [{"doc_id": "d1", "text": "beta", "start": 2}]}}],
        [("q1", "d1", 1)],
    )
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
    ('{"query": "a", "relevant": ["d"]}\n{"query": "b", "relevant": ["d"]\n', "s.jsonl",
     r"s.jsonl, line 2: not valid JSON"),
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
    ('{"query": "a", "relevant": ["d"]}\n{"query": "b \\ud800", "relevant": ["d"]}\n', "s.jsonl",
     r"s.jsonl, line 2: query: character 3 is a lone UTF-16 surrogate \(U\+D800"),
    ('{"query": "a", "relevant": ["d\\udcff"]}\n', "s.jsonl", r"line 1: relevant\[0\]: character 2 is the byte 0xFF"),
    (b"query,relevant\nx\xff,d\n", "s.csv", r"s.csv, line 2: byte 0xFF is not UTF-8"),
    ("query,relevant\n", "s.txt", r"use a .jsonl or .csv file"),
])
def test_malformed_user_sets_say_what_and_where(text: str | bytes, name: str, message: str | None) -> None:
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


def test_a_corpus_folder_leaves_out_what_ingest_would_refuse_and_says_so(tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nalpha text\n", encoding="utf-8")
    (corpus / "blob.txt").write_bytes(b"abc\x00" * 20)
    (tmp_path / "outside.md").write_text("outside", encoding="utf-8")
    (corpus / "link.md").symlink_to(tmp_path / "outside.md")
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "alpha", "relevant": ["a.md"]}\n', encoding="utf-8")
    s = load_user_set(queries, corpus=corpus)
    assert [d.doc_id for d in s.documents] == ["a.md"]
    warnings = answers_located(s)
    assert len(warnings) == 2 and all(w.startswith("corpus file not indexed: ") for w in warnings)
    assert any("NUL bytes" in w for w in warnings) and any("symbolic link" in w for w in warnings)
