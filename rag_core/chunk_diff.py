"""What re-ingesting a document changed, chunk by chunk, compared by content hash rather than by index.

Chunks are compared as multisets of their text's sha256 (the `chunkHash` every stored chunk carries): a chunk
is unchanged when the previous version had a chunk with the same text, wherever it was. So a paragraph added
at the top of a document shifts every index but shows as what it is: a few chunks added, the rest unchanged.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence

from .records import ChangedChunk, Chunk, ChunkDiff, StoredChunk


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def stored_hash(chunk: StoredChunk) -> str:
    return str((chunk.metadata or {}).get("chunkHash") or text_hash(chunk.content))


def chunk_diff(old: Sequence[StoredChunk], new: Sequence[Chunk]) -> ChunkDiff:
    """The previous version's chunks (`old`, as stored) against the new ones."""
    old_hashes = [stored_hash(c) for c in old]
    new_hashes = [text_hash(c.text) for c in new]
    common = Counter(old_hashes) & Counter(new_hashes)
    unchanged = sum(common.values())

    def beyond(hashes: list[str]) -> list[int]:
        """Positions of the hashes left once `common` is taken, first occurrences counted as kept."""
        left, out = Counter(common), []
        for i, h in enumerate(hashes):
            if left[h] > 0:
                left[h] -= 1
            else:
                out.append(i)
        return out

    added = tuple(ChangedChunk(new[i].chunk_index, new_hashes[i], new[i].text) for i in beyond(new_hashes))
    removed = tuple(ChangedChunk(old[i].chunk_index, old_hashes[i], old[i].content) for i in beyond(old_hashes))
    return ChunkDiff(added, removed, unchanged)
