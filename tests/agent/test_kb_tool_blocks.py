"""The knowledge-base tool with small to big on: the model reads the blocks (each `document_id` a block's key, its
`content` the expanded text, `matched` and `section` when they say something), and a citation of a chunk a block
holds counts as citing what the tool returned; the offline agent quotes from the blocks."""

from __future__ import annotations

import re

from rag_core.agent import Agent, DoneEvent, Toolbox, ToolResultEvent, knowledge_base_tool
from rag_core.agent.turn import AssistantTurn
from rag_core.citations import check_citations
from rag_core.identity import key_range
from rag_core.retrieval.expand import ExpandParams

QUERY = "how to free disk space"
PARENT = {"expand": ExpandParams("parent"), "max_chunks_per_document": 5}


def test_the_tool_gives_the_blocks_as_the_projection_holds_them(kb) -> None:
    out = knowledge_base_tool(kb.retriever, **PARENT).fn(QUERY)
    assert out.ok and out.lookup is not None
    items, projected = out.data["results"], out.lookup.projection.items
    assert [i["document_id"] for i in items] == [p.document_id for p in projected] == \
        [b.key for b in out.lookup.blocks][: len(items)]
    assert [i["content"] for i in items] == [p.content for p in projected]
    assert [i["tokens"] for i in items] == [p.tokens for p in projected] and all(i["tokens"] > 0 for i in items)
    merged = [i for i in items if ".." in i["document_id"]]
    assert merged, "the sample's disk runbook has neighbouring hits: one block holds several"
    for item in items:
        block = next(b for b in out.lookup.blocks if b.key == item["document_id"])
        assert ("matched" in item) == (len(block.matched) > 1)
        assert item.get("matched", [item["document_id"]]) == list(block.matched if len(block.matched) > 1 else
                                                                   (block.key,))
        assert item.get("section", "") == (block.section if block.grown else "")
    doc, first, last = key_range(merged[0]["document_id"])  # the range of the hits it holds
    assert {key_range(k)[1] for k in merged[0]["matched"]} >= {first, last}
    assert all(key_range(k)[0] == doc and first <= key_range(k)[1] <= last for k in merged[0]["matched"])

    # Every key the model may cite: the blocks' and the hits' they hold.
    assert out.evidence_keys == tuple(dict.fromkeys(k for i in items for k in (i["document_id"],
                                                                               *i.get("matched", ()))))
    member = merged[0]["matched"][-1]
    answer = f"Prune unused images [{member}]. Check inodes too [{merged[0]['document_id']}]."
    assert check_citations(answer, out.evidence_keys) == ((member, merged[0]["document_id"]), ())


def test_without_expansion_or_merging_the_items_read_as_before(kb) -> None:
    out = knowledge_base_tool(kb.retriever, expand=ExpandParams("none", merge=False)).fn(QUERY)
    items = out.data["results"]
    assert items and all("matched" not in i and "section" not in i for i in items)
    assert all(set(i) == {"document_id", "source", "content", "score", "truncated", "location", "tokens"}
               for i in items)
    assert out.evidence_keys == tuple(i["document_id"] for i in items)


def test_the_description_says_what_to_cite(kb) -> None:
    tool = knowledge_base_tool(kb.retriever)
    assert "Cite a result by its `document_id`" in tool.description
    assert "section around the matched chunk" in tool.description


def quotes_of(text: str) -> list[tuple[str, str]]:
    return re.findall(r'^- [“"](.+)[”"] \[([^\]]+)\]$', text, flags=re.M)


def test_the_offline_agent_quotes_the_same_best_sentence_from_expanded_and_merged_blocks(kb) -> None:
    question = "How do I find what is filling the disk when the disk is full?"
    answers = {}
    for mode in ("none", "parent", "neighbours"):
        tool = knowledge_base_tool(kb.retriever, expand=ExpandParams(mode), max_chunks_per_document=5)
        agent = Agent(Toolbox([tool]), None, embedder=kb.embedder)
        events = list(agent.run(question))
        result, done = events[1], events[-1]
        assert isinstance(result, ToolResultEvent) and isinstance(done, DoneEvent) and result.lookup is not None
        content = {p.document_id: p.content for p in result.lookup.projection.items}
        quotes = quotes_of(done.text)
        assert quotes and done.unverified_citations == ()
        for sentence, key in quotes:  # each quote cites the block it was quoted from
            assert key in content and sentence.removesuffix("…") in content[key]
        answers[mode] = quotes
        if mode != "none":
            assert any(".." in k for k in done.citations)  # a merged block is cited by its range
            turn = AssistantTurn.from_events(events)
            evidence = turn.evidence()
            assert all(k in evidence for k in done.citations)  # every citation opens in the chat page
            block = evidence[next(k for k in done.citations if ".." in k)]
            assert block["content"] == content[block["evidence_key"]] and len(block["matched"]) > 1
            assert all(evidence[k]["block"] == block["evidence_key"] for k in block["matched"])
            assert turn.blocks()[block["evidence_key"]]["matched"] == block["matched"]
    # The best sentence is the one quoted without expansion: growing the blocks adds context, not a better match.
    assert [q for q, _ in answers["parent"]][0] == [q for q, _ in answers["none"]][0]
    assert [q for q, _ in answers["neighbours"]][0] == [q for q, _ in answers["none"]][0]
