"""What the agent reads (issue 36): answer in context, span recall over the projected items' document ranges and the
tokens they use; the expansion and the budgets as sweep parameters that re-assemble the fetched hits."""

from __future__ import annotations

import pytest

from rag_core.bootstrap import factories
from rag_core.config import load_settings
from rag_core.errors import EvaluationError
from rag_core.evaluation import Answer, Grid, Span, load_beir, load_set, run_evaluation
from rag_core.evaluation import metrics as m
from rag_core.evaluation.runner import summarize
from rag_core.records import Block, Candidate, Projected
from tests.evaluation.conftest import TINY

DOC = "0123456789" * 10  # a document of 100 characters


def _block(start: int | None, end: int | None, content: str, key: str = "d#chunk-1..2") -> Block:
    hit = Candidate(rank=1, id="1", doc_id="d", chunk_index=1, evidence_key="d#chunk-1", score=1.0, content=content,
                    source="d", metadata={}, hit_reasons=("bm25",))
    return Block(key=key, hit=hit, matched=(key,), content=content, start=start, end=end)


def _item(content: str, key: str = "d#chunk-1..2", truncated: bool = False) -> Projected:
    return Projected(document_id=key, source="d", content=content, score=1.0, truncated=truncated)


def test_a_placed_item_covers_its_blocks_range_and_a_cut_one_only_what_was_kept():
    whole = m.context_item(_item(DOC[20:60]), _block(20, 60, DOC[20:60]))
    assert (whole.doc_id, whole.start, whole.end) == ("d", 20, 60)
    cut = m.context_item(_item(DOC[20:35] + " …[truncated 9 tokens]", truncated=True), _block(20, 60, DOC[20:60]))
    assert (cut.start, cut.end) == (20, 35)
    chars = m.context_item(_item(DOC[20:30] + " …[truncated 30 chars]", truncated=True), _block(20, 60, DOC[20:60]))
    assert (chars.start, chars.end) == (20, 30)
    # not an exact slice (an edited chunk, a gap): unplaced, matched by its text
    edited = m.context_item(_item("edited\n\n" + DOC[20:60]), _block(20, 60, "edited\n\n" + DOC[20:60]))
    assert edited.start is None and edited.content.startswith("edited")
    assert m.context_item(_item(DOC[20:60]), None).doc_id == "d"  # the key names the document


def test_span_recall_counts_the_characters_covered_once_and_the_best_answer():
    answer = Answer(DOC[30:50], "d", 30)
    items = [m.ContextItem("d", DOC[20:40], 20, 40), m.ContextItem("d", DOC[35:45], 35, 45),
             m.ContextItem("e", DOC[40:50], 40, 50)]  # another document covers nothing
    assert m.span_recall_context(items, [answer]) == pytest.approx(15 / 20)
    elsewhere = Answer(DOC[0:10], "d", 0)
    assert m.span_recall_context(items, [elsewhere, answer]) == pytest.approx(15 / 20)
    unplaced = [m.ContextItem("d", "x " + DOC[30:50])]
    assert m.span_recall_context(unplaced, [answer]) == 1.0  # an unplaced item holding the answer's text
    assert m.span_recall_context([m.ContextItem("d", DOC[30:45])], [answer]) == 0.0
    spans = [Span("d", 20, 40), Span("d", 60, 80)]
    assert m.span_recall_context(items, [], spans) == pytest.approx((20 / 20 + 0) / 2)
    assert m.span_recall_context(items, [Answer("text only")]) is None  # no offsets, no spans: no figure


def test_answer_in_context_needs_the_text_in_an_item_of_the_answers_document():
    items = [m.ContextItem("d", "the answer is 42", 0, 16), m.ContextItem("e", "also 43")]
    assert m.answer_in_context(items, [Answer("42", "d", 14)])
    assert not m.answer_in_context(items, [Answer("43", "d", 5)])
    assert m.answer_in_context(items, [Answer("43")], {"e": 1})  # no document: a relevant one
    assert not m.answer_in_context(items, [Answer("43")], {"d": 1})


def test_summary_means_the_context_figures():
    records = [{"answer_in_context": True, "span_recall_context": 0.5, "context_tokens_used": 100},
               {"answer_in_context": False, "span_recall_context": None, "context_tokens_used": 300}]
    base = {"answer_found": True, "raw_answer_found": True, "answer_lost": False, "span_found": None,
            "distinct_docs": 1, "evidence_blocks": 1, "latency_ms": 1.0, "failed": False,
            **{k: 0.0 for k in ("ndcg@10", "recall@1", "recall@5", "recall@10", "recall@20", "mrr@10")}}
    base.update({f"raw_{k}": 0.0 for k in ("ndcg@10", "recall@1", "recall@5", "recall@10", "recall@20", "mrr@10")})
    summary = summarize([{**base, **r} for r in records])
    assert (summary["answer_in_context"], summary["span_recall_context"], summary["context_tokens_used"]) == (
        0.5, 0.5, 200)


def test_the_grid_takes_the_context_parameters_and_checks_them(eval_data_dir):
    settings = load_settings(data_dir=eval_data_dir, env={}, config_file=None)
    grid = Grid.from_settings(settings, expand=["none", "neighbours", "parent"], expand_neighbours=[1, 2],
                              context_tokens=[1000, 2000])
    points, _ = grid.points()
    # neighbours only matter with expand = neighbours: 2 budgets x (none, neighbours 1, neighbours 2, parent)
    assert [(p.expand, p.expand_neighbours, p.context_tokens) for p in points if p.context_tokens == 1000] == [
        ("none", 1, 1000), ("neighbours", 1, 1000), ("neighbours", 2, 1000), ("parent", 1, 1000)]
    assert len(points) == 8 and points[0].to_dict()["expand_neighbours"] is None
    assert grid.varying() == ["expand", "expand_neighbours", "context_tokens"]
    with pytest.raises(EvaluationError, match="expansion"):
        Grid.from_settings(settings, expand=["sideways"]).points()
    with pytest.raises(EvaluationError, match="context-tokens"):
        Grid.from_settings(settings, context_tokens=[0]).points()


def test_a_sweep_of_expansions_fetches_once_and_every_point_reads_within_its_budget(eval_data_dir, local_embedder):
    settings = load_settings(data_dir=eval_data_dir, env={}, config_file=None,
                             overrides={"projection.max-chars-per-item": 100_000,
                                        "projection.max-total-chars": 1_000_000})
    eval_set = load_set("sample", limit=8)
    seen = []
    run = run_evaluation(eval_set, Grid.from_settings(settings, expand=["none", "neighbours", "parent"],
                                                      context_tokens=[300, 2000], return_n=[10], retrieve_k=[20]),
                         settings, factories=factories(), embedder=local_embedder, progress=seen.append,
                         score_more=lambda q, result: {"blocks_grown": sum(b.grown for b in result.blocks)})
    assert seen[-1].total == 8  # one fetch per query for the six points: the expansion re-assembles
    assert [(p.point.expand, p.point.context_tokens) for p in run.points] == [
        ("none", 300), ("none", 2000), ("neighbours", 300), ("neighbours", 2000), ("parent", 300), ("parent", 2000)]
    for p in run.points:
        assert all(q["context_tokens_used"] <= p.point.context_tokens for q in p.queries)
        assert p.metrics["answer_in_context"] is not None and p.metrics["span_recall_context"] is None  # no offsets
        grown = sum(q["blocks_grown"] for q in p.queries)
        assert grown == 0 if p.point.expand == "none" else grown > 0
    by = {(p.point.expand, p.point.context_tokens): p.metrics for p in run.points}
    assert by[("none", 300)]["context_tokens_used"] < by[("none", 2000)]["context_tokens_used"]
    assert by[("parent", 2000)]["context_tokens_used"] > by[("none", 300)]["context_tokens_used"]


def test_answers_with_offsets_get_a_span_figure_from_the_projected_ranges(eval_data_dir, local_embedder):
    settings = load_settings(data_dir=eval_data_dir, env={}, config_file=None)
    eval_set = load_beir(TINY)
    run = run_evaluation(eval_set, Grid.from_settings(settings, expand=["none", "parent"]), settings,
                         factories=factories(), embedder=local_embedder)
    for p in run.points:
        by_id = {q["query_id"]: q for q in p.queries}
        assert by_id["q6"]["span_recall_context"] is None  # its answer has no offset: no span to cover
        with_answers = [q for q in p.queries if q["span_recall_context"] is not None]
        assert len(with_answers) > 5 and all(0 <= q["span_recall_context"] <= 1 for q in with_answers)
        # the whole span covered is its text in what the agent reads
        for q in with_answers:
            assert (q["span_recall_context"] == 1.0) <= q["answer_in_context"]
        assert all(q["context_unplaced"] == 0 for q in p.queries)  # blocks are exact slices of the documents


def test_the_cli_sweeps_the_expansion(eval_data_dir, capsys):
    from rag_core.cli import main

    code = main(["--data-dir", str(eval_data_dir), "eval", "sample", "--limit", "3", "--expand", "none,parent",
                 "--context-tokens", "2000", "--no-save", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0 and "ans_ctx" in out and "ctx_used" in out
    assert [line.split()[1] for line in out.splitlines() if line[:2] in ("1 ", "2 ")] == ["none", "parent"]

