"""The overall count of an ingest run (ingest.IngestTally), folded from its progress events: files done of all, and
chunks embedded of the chunks to embed, as the Home and Knowledge base pages show them."""

from __future__ import annotations

from rag_core.ingest import IngestProgress, IngestTally


def fold(events: list[IngestProgress]) -> IngestTally:
    tally = IngestTally()
    for event in events:
        tally = tally.add(event)
    return tally


def ev(index: int, stage: str, done: int = 0, total: int = 0, files: int = 3) -> IngestProgress:
    return IngestProgress(index, files, f"f{index}", stage, done, total)


def test_files_read_then_embedded_together_count_chunks_not_the_file_last_read() -> None:
    """Ten files read, then embedded as one group: the count used to say "file 10 of 10 (0%)" for the whole of the
    embedding; it is the chunks embedded of all the group's chunks."""
    read = [ev(i, "loading", files=10) for i in range(10)]
    tally = fold(read)
    assert (tally.files, tally.files_done, tally.chunks, tally.reading) == (10, 0, 0, 9)
    started = [ev(i, "embedding", 0, 5, files=10) for i in range(10)]
    tally = fold(read + started)
    assert (tally.files_done, tally.chunks_embedded, tally.chunks, tally.chunk_fraction) == (0, 0, 50, 0.0)
    assert tally.reading is None  # embedding, not reading
    half = [ev(i, "embedding", 2 if i % 2 else 3, 5, files=10) for i in range(10)]
    tally = fold(read + started + half)
    assert (tally.chunks_embedded, tally.chunks, tally.chunk_fraction) == (25, 50, 0.5)
    done = [ev(i, "done", 5, 5, files=10) for i in range(10)]
    tally = fold(read + started + half + done)
    assert (tally.files_done, tally.chunks_embedded, tally.chunks, tally.chunk_fraction) == (10, 50, 50, 1.0)


def test_unchanged_failed_and_skipped_files_are_done_without_chunks_to_embed() -> None:
    events = [ev(0, "loading"), ev(1, "loading"), ev(1, "failed"), ev(2, "loading"),
              ev(0, "done", 7, 7),  # unchanged: done with its 7 chunks, none embedded
              ev(2, "embedding", 0, 4), ev(2, "embedding", 4, 4), ev(2, "done", 4, 4)]
    tally = fold(events)
    assert (tally.files_done, tally.chunks_embedded, tally.chunks) == (3, 4, 4)
    skipped = fold([ev(0, "loading", files=1), ev(0, "skipped", files=1)])
    assert (skipped.files_done, skipped.chunks, skipped.chunk_fraction) == (1, 0, 0.0)


def test_a_group_that_fails_is_retried_file_by_file_and_the_failing_file_leaves_the_count() -> None:
    group = [ev(0, "loading"), ev(1, "loading"), ev(0, "embedding", 0, 6), ev(1, "embedding", 0, 4),
             ev(0, "embedding", 6, 6), ev(1, "embedding", 4, 4)]
    retried = [ev(0, "embedding", 0, 6), ev(0, "embedding", 6, 6), ev(0, "done", 6, 6),
               ev(1, "embedding", 0, 4), ev(1, "failed")]
    tally = fold(group + retried)
    assert (tally.files_done, tally.chunks_embedded, tally.chunks) == (2, 6, 6)


def test_a_second_group_adds_its_chunks_when_it_starts_and_reading_is_shown_between() -> None:
    first = [ev(0, "loading"), ev(1, "loading"), ev(0, "embedding", 0, 10), ev(0, "embedding", 10, 10),
             ev(0, "done", 10, 10)]
    tally = fold(first)
    assert (tally.files_done, tally.chunks_embedded, tally.chunks, tally.reading) == (1, 10, 10, None)
    tally = tally.add(ev(2, "loading"))
    assert tally.reading == 2
    tally = fold([*first, ev(2, "loading"), ev(1, "embedding", 0, 3), ev(2, "embedding", 0, 5)])
    assert (tally.chunks_embedded, tally.chunks, tally.reading) == (10, 18, None)
