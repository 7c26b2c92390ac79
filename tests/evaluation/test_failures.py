"""A 👎 turn's expected chunk, and an answer's citations, when the turn cited a block of merged hits
(`doc#chunk-3..5`)."""

from __future__ import annotations

import pytest

from rag_core.errors import EvaluationError
from rag_core.evaluation.answers import answer_text
from rag_core.evaluation.failures import expected_target, failure_item
from rag_core.feedback.records import TurnRecord


@pytest.mark.parametrize("expected, target", [
    ("runbooks/disk_full.md", ("runbooks/disk_full.md", None)),
    ("runbooks/disk_full.md#chunk-4", ("runbooks/disk_full.md", "runbooks/disk_full.md#chunk-4")),
    ("runbooks/disk_full.md#chunk-3..5", ("runbooks/disk_full.md", "runbooks/disk_full.md#chunk-3")),
    ("ops:runbooks/disk_full.md#chunk-3..5", ("runbooks/disk_full.md", "runbooks/disk_full.md#chunk-3")),
])
def test_a_cited_range_expects_its_first_matched_chunk(expected, target) -> None:
    assert expected_target(expected, ("ops",)) == target


@pytest.mark.parametrize("bad", ["a.md#chunk-x", "a.md#chunk-3..", "a.md#chunk-3..x"])
def test_what_is_no_chunk_key_is_refused(bad) -> None:
    with pytest.raises(EvaluationError, match="is not a document or a chunk key"):
        expected_target(bad)


def test_a_failed_turn_citing_a_block_makes_a_test_item_of_one_chunk() -> None:
    turn = TurnRecord("s", "How do I free disk space?", "Prune images [a.md#chunk-3..5].", trace_id="abc123",
                      citations=("a.md#chunk-3..5",))
    item = failure_item(turn, turn.citations[0], "prune images")
    assert (item.relevant, item.source, item.answers) == (("a.md",), "a.md#chunk-3", ("prune images",))


def test_citations_of_blocks_are_not_scored_as_words() -> None:
    assert answer_text("Prune images [a.md#chunk-3..5] and rotate logs 【a.md#chunk-7】.").split() == \
        ["Prune", "images", "and", "rotate", "logs", "."]
