"""bench/sources.py at its quick size (60 documents), so the sync benchmark cannot rot: a sync with nothing changed
embeds nothing, one with 10 files changed embeds exactly their chunks (counts, never durations)."""

from __future__ import annotations

import pytest

from bench import sources


@pytest.mark.milvus  # opens Milvus Lite: not in `make test-unit`
def test_the_benchmark_counts_what_each_sync_embeds():
    record = sources.measure(60)
    first, same, changed, moved = (record[k] for k in ("first", "unchanged", "changed_files", "deleted_added"))
    assert (first["added"], first["failed"]) == (60, 0) and first["embedded"] == first["chunks"] > 60
    assert (same["unchanged"], same["embedded"]) == (60, 0)
    assert (changed["replaced"], changed["unchanged"]) == (10, 50)
    assert changed["embedded"] == changed["chunks_of_changed"] > 0
    assert (moved["added"], moved["deleted"], moved["embedded"]) == (10, 10, moved["chunks_of_added"])
    text = sources.render({**record, "machine": "test machine", "load": "load"})
    assert text.startswith("#### ") and "unchanged embeds nothing: met" in text
    assert "changed embeds only their chunks: met" in text
