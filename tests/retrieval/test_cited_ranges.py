"""A block's key (`doc#chunk-3..5`, hits merged into one block) where an answer's citations are read: the rewrite
stage reads a cited range as its first chunk's heading, as it reads a cited chunk."""

from __future__ import annotations

from rag_core.records import Chunk, ConversationTurn
from rag_core.retrieval.rewrite import OfflineRewriter
from rag_core.retrieval.stages import RewriteQuestion
from tests.retrieval.memory import InMemorySearchPort

TEXTS = ["Disk space runs low on nodes.", "Prune unused images first.", "Then rotate the logs."]
HEADINGS = [("Disk",), ("Disk", "Free space"), ("Disk", "Logs")]


def test_a_cited_block_range_reads_as_its_first_chunks_heading() -> None:
    chunks, pos = [], 0
    for i, (text, path) in enumerate(zip(TEXTS, HEADINGS)):
        chunks.append(Chunk(i, text, pos, pos + len(text), path[-1], path, 0))
        pos += len(text) + 2
    stage = RewriteQuestion(InMemorySearchPort({"disk.md": chunks}), OfflineRewriter(), None)
    history = [ConversationTurn("user", "How do I free disk space?"),
               ConversationTurn("assistant", "Prune images [disk.md#chunk-1..2], see [disk.md#chunk-0] and "
                                             "[gone.md#chunk-4..5]."),
               ConversationTurn("assistant", "As before [disk.md#chunk-2].")]
    cited = stage.cited(history)
    assert cited[0].cited == ()
    assert cited[1].cited == ("Disk > Free space", "Disk", "gone.md")  # a range: its first chunk; unknown: the file
    assert cited[2].cited == ("Disk > Logs",)
