"""explain says codes with parameters (rag_core.phrases): the JSON carries each phrase beside the English
text it renders to, the one English renderer joins nested phrases, and an unknown code is shown as the code."""

from __future__ import annotations

import json

from rag_core.phrases import Phrase, english, joined
from rag_core.retrieval import KnowledgeRetriever
from rag_core.retrieval.explain import explain
from tests.retrieval.memory import InMemorySearchPort
from tests.retrieval.test_explain import DOCS, PARAMS


def test_the_json_carries_every_phrase_beside_its_english():
    port = InMemorySearchPort(DOCS)
    for expect, answer in (("many.md#chunk-2", None), ("none.md", None), (None, "alpha pad"), ("x1.md", "nope")):
        data = json.loads(json.dumps(explain(KnowledgeRetriever(port), port.store, "alpha", expect, answer,
                                             **PARAMS).to_dict()))  # phrases survive JSON
        assert english(data["verdict_phrase"]) == data["verdict"]
        assert [english(c["cause_phrase"]) for c in data["chunks"]] == [c["cause"] for c in data["chunks"]]
        assert [english(n) for n in data["note_phrases"]] == data["notes"]
        if data["fix"]:
            assert english(data["fix"]["phrase"]) == data["fix"]["text"]
        if data["answer"]:
            assert english(data["answer"]["summary_phrase"]) == data["answer"]["summary"]
        assert [english(w) for w in data["warning_phrases"]] == data["warnings"]
    lookup = KnowledgeRetriever(port).lookup("alpha", **PARAMS, score_threshold=0.99).to_dict()
    assert lookup["warnings"] and [english(w) for w in lookup["warning_phrases"]] == lookup["warnings"]
    assert lookup["warning_phrases"][0]["code"] == "warning.all_below_threshold"
    cap = explain(KnowledgeRetriever(port), port.store, "alpha", "many.md#chunk-2", **PARAMS)
    assert cap.targets[0].cause_phrase(cap.params) == Phrase("fate.doc_cap", {
        "cap": 2, "by": ("many.md#chunk-0", "many.md#chunk-1")})


def test_nested_phrases_lists_and_unknown_codes():
    said = joined("sentences", [Phrase("verdict.fix", {"fix": joined("and", [
        Phrase("fix.at_least", {"setting": "retrieve-k", "value": 8}),
        Phrase("fix.at_most", {"setting": "score-threshold", "value": "0.2"})]), "target": "a#chunk-1"}),
        Phrase("note.answer_also_in", {"docs": ("b.md", "c.md")})])
    assert english(said) == ("Smallest change: retrieve-k ≥ 8 and score-threshold ≤ 0.2, which brings in a#chunk-1. "
                             "The answer text also occurs in b.md, c.md.")
    assert english(said.to_dict()) == english(said)
    assert english(Phrase("fate.from_the_future", {"x": 1})) == "fate.from_the_future"
    assert english(Phrase("fate.kept")) == "fate.kept"  # its {rank} is missing: the code, not an error
