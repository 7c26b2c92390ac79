"""A 👎 turn made into a test case: its question, the document or chunk that should have been found, and the
right answer, appended to a named test set (rag_core.evaluation.testsets) that `eval` and `eval answers` run.

Not imported by the package's `__init__`: the agent imports the records, and evaluation imports the agent."""

from __future__ import annotations

from ..errors import EvaluationError
from ..feedback.records import TurnRecord
from ..identity import key_range
from .testsets import TestItem, TestSetStore, UnknownTestSet, check_name

CHUNK = "#chunk-"


def expected_target(expected: str, knowledge_bases: tuple[str, ...] = ()) -> tuple[str, str | None]:
    """(doc_id, evidence key or None) of what should have been found: a doc_id, or a chunk's evidence key
    `doc_id#chunk-N`. A key of a search over several knowledge bases (`kb:doc_id#chunk-N`) loses its `kb:`, since
    a test set runs on one knowledge base. A block's key (`doc_id#chunk-3..5`, hits merged into one block) names its
    first matched chunk, `doc_id#chunk-3`: a test item expects one chunk."""
    expected = (expected or "").strip()
    if not expected:
        raise EvaluationError("Pick the document or chunk the answer should have come from.")
    kb, sep, rest = expected.partition(":")
    if sep and kb in knowledge_bases:
        expected = rest
    doc_id, chunk, _ = expected.partition(CHUNK)
    if not chunk:
        return doc_id, None
    named = key_range(expected)
    if named is None:
        raise EvaluationError(f"{expected!r} is not a document or a chunk key (doc_id#chunk-N).")
    return named[0], f"{named[0]}{CHUNK}{named[1]}"


def failure_item(turn: TurnRecord, expected: str, answer: str = "", question: str | None = None) -> TestItem:
    """The test item a failed turn teaches: asked as `question` (default: the turn's), answered from `expected`."""
    doc_id, source = expected_target(expected, turn.knowledge_bases)
    query = (question if question is not None else turn.question).strip()
    if not query:
        raise EvaluationError("The question cannot be empty.")
    return TestItem(id=f"fb-{turn.trace_id[:12] or turn.id}", query=query, relevant=(doc_id,),
                    answers=(answer.strip(),) if answer.strip() else (), source=source, review="accepted")


def add_to_test_set(sets: TestSetStore, name: str, item: TestItem) -> str:
    """Append `item` to the named set (made when new); an item of the same id (the same turn added again) is
    replaced. The set is saved whole (`TestSetStore.save`): a failure leaves it as it was. Where it went."""
    name = check_name(name)
    try:
        existing = sets.load(name).items
    except UnknownTestSet:
        existing = ()
    items = [i for i in existing if i.id != item.id] + [item]
    return sets.save(name, items, None if existing else {"generator": "", "made_from": "failures"})
