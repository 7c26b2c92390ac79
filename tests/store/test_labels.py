"""Document labels in the chunk rows follow the labels file crash-safely: a process killed while a tag change
rewrites the rows, or between a new version's commit and its front matter reaching the file, leaves a mark that the
next open settles (store.labels), re-deriving the rows from the file."""

from __future__ import annotations

import pytest

from rag_core.kb.tags import metadata, tag
from rag_core.store.labels import RELABEL, DocumentLabels
from tests.helpers import SAMPLE_KB, make_workbench


def test_a_mark_left_by_a_dead_writer_is_settled_by_the_content_its_front_matter_was_read_from():
    labels = DocumentLabels()
    labels.begin({"a.md": ({"service": ["x"]}, "hash-a"), "b.md": ({"service": ["y"]}, "hash-b")}, {"w": "1"})
    labels.set_tags("c.md", {"team": ["sre"]}, writer={"w": "2"})
    assert {d: len(m) for d, m in labels.pending().items()} == {"a.md": 1, "b.md": 1, "c.md": 1}
    relabelled: list[list[str]] = []
    assert labels.recover(relabelled.append, lambda mark: mark["w"] == "1", lambda: {"a.md": "hash-a"}) == [
        "a.md", "b.md"]
    assert relabelled == [["a.md", "b.md"]]  # the rows are re-derived while the marks still stand
    assert labels.all() == {"a.md": {"service": ("x",)}, "c.md": {"team": ("sre",)}}  # b's version never committed
    assert list(labels.pending()) == ["c.md"]  # a live writer's is spared
    labels.finish(["c.md"], kind=RELABEL, apply=False)
    assert labels.pending() == {}


@pytest.mark.milvus
def test_rows_follow_the_labels_file_after_a_kill_during_a_tag_change_or_after_an_ingest_commit(
        tmp_path, local_embedder, monkeypatch):
    data = tmp_path / "data"
    source = tmp_path / "disk.md"
    source.write_text("---\nservice: storage\n---\n" + (SAMPLE_KB / "runbooks" / "disk_full.md").read_text())
    wb = make_workbench(data, local_embedder)
    try:
        assert wb.ingestor.ingest_paths([source])[0].status == "added"

        def killed(*args, **kwargs):
            raise KeyboardInterrupt  # the process dies before the rows are rewritten / the file is told

        with monkeypatch.context() as m:
            m.setattr(wb.store, "relabel", killed)
            with pytest.raises(KeyboardInterrupt):
                tag(wb.store, "disk.md", ["team=sre"])
        assert not any("team=sre" in c.labels for c in wb.store.get_chunks("disk.md"))  # the file has it, rows not
        assert wb.store.recover() == 0 and wb.store.labels.pending() == {}  # its writer is gone (not writing now)
        assert all("team=sre" in c.labels for c in wb.store.get_chunks("disk.md"))
        source.write_text(source.read_text().replace("service: storage", "service: disks"))
        with monkeypatch.context() as m:
            m.setattr(wb.store.labels, "finish", killed)
            with pytest.raises(KeyboardInterrupt):
                wb.ingestor.ingest_paths([source])
        assert metadata(wb.store)["disk.md"]["service"] == ["storage"]  # committed, the file not yet told
        assert all("service=disks" in c.labels for c in wb.store.get_chunks("disk.md"))
    finally:
        wb.close()
    wb = make_workbench(data, local_embedder)  # recovery on open settles both marks
    try:
        assert wb.store.labels.pending() == {}
        assert metadata(wb.store)["disk.md"]["service"] == ["disks"] and metadata(wb.store)["disk.md"]["team"] == [
            "sre"]
        assert all({"service=disks", "team=sre"} <= set(c.labels) for c in wb.store.get_chunks("disk.md"))
        assert not any("service=storage" in c.labels for c in wb.store.get_chunks("disk.md"))
    finally:
        wb.close()
