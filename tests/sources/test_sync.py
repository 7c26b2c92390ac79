"""A source's sync (rag_core/sources/sync.py) against a real knowledge base: Milvus Lite and the local embedder,
with an embedder that counts what it embeds, so "unchanged" is seen to embed nothing."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.sources import Counting
from rag_core.agent.kb_tool import tool_payload
from rag_core.errors import SourceError
from rag_core.files import FileLock
from rag_core.kb.chunk_edits import edit_chunk
from rag_core.scope import parse_scope
from rag_core.sources.book import Source, SourceBook
from rag_core.sources.folder import FolderReader
from rag_core.sources.records import SourceItem
from rag_core.sources.sync import sync
from rag_core.store.kept import MemoryDocument
from tests.helpers import make_workbench

pytestmark = pytest.mark.milvus


@pytest.fixture(scope="module")
def wb(tmp_path_factory: pytest.TempPathFactory, local_embedder, milvus) -> Iterator[Any]:
    wb = make_workbench(tmp_path_factory.mktemp("sync-kb"), Counting(local_embedder))
    yield wb
    wb.close()


def write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")


def folder_with(root: Path, n: int) -> Path:
    write(root, {f"doc{i}.md": f"# Document {i}\n\nRunbook {i}: restart service {i} when it hangs."
                 for i in range(n)})
    return root


def a_source(name: str, root: Path) -> tuple[Source, SourceBook]:
    book = SourceBook(MemoryDocument(), FileLock(None), None)
    return book.add(Source(name, "biz", "folder", str(root), name)), book


def run(source: Source, book: SourceBook, wb: Any, **kw: Any) -> Any:
    kw.setdefault("max_delete_share", 0.3)
    result = sync(book.get(source.name), FolderReader(source.location), wb.ingestor, book, **kw)
    return result.to_dict()


def counts(d: dict[str, Any]) -> tuple[int, ...]:
    return tuple(d[k] for k in ("added", "replaced", "unchanged", "deleted", "failed"))


def docs(wb: Any, folder: str) -> list[str]:
    return [d.doc_id for d in wb.store.list_documents() if d.doc_id.startswith(folder + "/")]


def test_a_folder_kept_in_sync_adds_skips_replaces_deletes(tmp_path: Path, wb: Any) -> None:
    root = folder_with(tmp_path, 5)
    source, book = a_source("runbooks", root)
    first = run(source, book, wb)
    assert counts(first) == (5, 0, 0, 0, 0) and first["ok"]
    assert docs(wb, "runbooks") == [f"runbooks/doc{i}.md" for i in range(5)]
    status = book.get("runbooks").status
    assert status["added"] == 5 and status["started_at"]
    assert book.get("runbooks").indexed["doc0.md"]["url"] == (root / "doc0.md").as_uri()
    assert wb.store.labels.tags("runbooks/doc0.md") == {"source": ["runbooks"],
                                                         "source_url": [(root / "doc0.md").as_uri()]}

    embedded = wb.embedder.embedded
    assert counts(run(source, book, wb)) == (0, 0, 5, 0, 0)
    assert wb.embedder.embedded == embedded  # nothing re-embedded

    st = (root / "doc1.md").stat()  # touched, same bytes: read, hashed, still unchanged
    os.utime(root / "doc1.md", ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    assert counts(run(source, book, wb)) == (0, 0, 5, 0, 0) and wb.embedder.embedded == embedded

    write(root, {"doc2.md": "# Document 2\n\nRunbook 2 changed: page the on-call first."})
    (root / "doc3.md").unlink()
    write(root, {"new.md": "# New\n\nA runbook added at the source."})
    d = run(source, book, wb)
    assert counts(d) == (1, 1, 3, 1, 0)
    assert d["changes"] == {"added": ["runbooks/new.md"], "replaced": ["runbooks/doc2.md"],
                            "deleted": ["runbooks/doc3.md"]}
    assert "runbooks/doc3.md" not in docs(wb, "runbooks") and "runbooks/new.md" in docs(wb, "runbooks")
    assert wb.embedder.embedded > embedded


def test_dry_run_lists_and_changes_nothing(tmp_path: Path, wb: Any) -> None:
    root = folder_with(tmp_path, 3)
    source, book = a_source("dry", root)
    run(source, book, wb)
    before, status, embedded = docs(wb, "dry"), book.get("dry").status, wb.embedder.embedded
    write(root, {"doc0.md": "# changed", "extra.md": "# Extra\n\nmore"})
    (root / "doc1.md").unlink()
    d = run(source, book, wb, dry_run=True)
    assert d["dry_run"] and d["changes"] == {"added": ["dry/extra.md"], "replaced": ["dry/doc0.md"],
                                             "deleted": ["dry/doc1.md"]}
    assert docs(wb, "dry") == before and book.get("dry").status == status and wb.embedder.embedded == embedded


def test_a_sync_deleting_too_much_stops_until_allowed(tmp_path: Path, wb: Any) -> None:
    root = folder_with(tmp_path, 4)
    source, book = a_source("guarded", root)
    run(source, book, wb)
    for i in range(2):
        (root / f"doc{i}.md").unlink()
    with pytest.raises(SourceError, match=r"would delete 2 of its 4 documents, more than sources.max-delete-share "
                                          r"\(30%\).*--allow-deletes"):
        run(source, book, wb)
    assert len(docs(wb, "guarded")) == 4 and book.get("guarded").status["error"]
    assert counts(run(source, book, wb, allow_deletes=True)) == (0, 0, 2, 2, 0)
    assert docs(wb, "guarded") == ["guarded/doc2.md", "guarded/doc3.md"]


def test_an_unreadable_file_is_counted_as_failed_and_the_others_go_on(tmp_path: Path, wb: Any) -> None:
    root = folder_with(tmp_path, 2)
    os.symlink(root / "nowhere.md", root / "dangling.md")
    write(root, {"empty.md": "   \n"})  # read, refused by ingest: no text to index
    source, book = a_source("partly", root)
    d = run(source, book, wb)
    assert counts(d) == (2, 0, 0, 0, 2)
    assert "dangling.md: cannot be read" in d["failures"]["partly/dangling.md"]
    assert "nothing to index" in d["failures"]["partly/empty.md"]
    assert book.get("partly").status["failures"] == d["failures"]


def test_a_missing_folder_deletes_nothing_and_fails_with_one_line(tmp_path: Path, wb: Any) -> None:
    root = folder_with(tmp_path / "mnt", 2)
    source, book = a_source("mounted", root)
    run(source, book, wb)
    root.rename(tmp_path / "unmounted")
    with pytest.raises(SourceError, match=r"folder .*mnt: no such folder"):
        run(source, book, wb, allow_deletes=True)
    assert len(docs(wb, "mounted")) == 2
    assert "no such folder" in book.get("mounted").status["error"]
    assert len(book.get("mounted").indexed) == 2  # what the last good sync indexed is kept


def test_a_sync_never_runs_twice_at_once(tmp_path: Path, wb: Any) -> None:
    source, book = a_source("locked", folder_with(tmp_path, 1))
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with book.sync_lock(source)():
            held.set()
            release.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    held.wait(30)
    try:
        with pytest.raises(SourceError, match="a sync of it is running already"):
            run(source, book, wb)
    finally:
        release.set()
        t.join()
    assert counts(run(source, book, wb)) == (1, 0, 0, 0, 0)


def test_a_sync_is_one_trace_with_its_counts(tmp_path: Path, wb: Any) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from rag_core import tracing
    from rag_core.sources.manage import sync_source

    source, book = a_source("traced", folder_with(tmp_path / "traced", 3))
    exporter = InMemorySpanExporter()
    tracing.install(tracing.TracingConfig(), exporter, simple=True)
    try:
        sync_source(wb.settings, book, book.get("traced"), wb.ingestor)
    finally:
        tracing.install(tracing.TracingConfig(), pinned=False)
    finished = exporter.get_finished_spans()
    (root,) = [s for s in finished if s.parent is None]  # one trace: everything the sync did is under it
    assert root.name == "sources.sync" and {s.context.trace_id for s in finished} == {root.context.trace_id}
    attributes = dict(root.attributes or {})
    assert (attributes["rag.source.added"], attributes["rag.source.deleted"]) == (3, 0)


class Listed:
    """A reader giving the items it is handed (a source with URLs and access groups, as Confluence's)."""

    def __init__(self, items: list[SourceItem]) -> None:
        self.listed = items

    def describe(self) -> str:
        return "listed items"

    def items(self) -> Iterator[SourceItem]:
        yield from self.listed


def item(path: str, text: str, url: str, groups: tuple[str, ...] = (), version: str = "1") -> SourceItem:
    return SourceItem(path, lambda: text.encode(), version=version, url=url, groups=groups)


def test_hits_link_to_their_source_in_every_view_of_a_lookup(tmp_path: Path, wb: Any) -> None:
    url = "https://wiki.example.com/pages/42"
    source, book = a_source("linked", tmp_path)
    reader = Listed([item("gateway.md", "# Gateway\n\nRotate the zebra-lantern certificate every quarter.", url),
                     item("other.md", "# Other\n\nNothing about certificates here.", "")])
    sync(book.get("linked"), reader, wb.ingestor, book, max_delete_share=0.3)
    result = wb.retriever.lookup("zebra-lantern certificate", scope=parse_scope("source=linked"))
    data = result.to_dict()
    top = data["evidence"][0]
    assert top["doc_id"] == "linked/gateway.md" and top["source_url"] == url
    assert data["raw_hits"][0]["source_url"] == url
    assert [h["source_url"] for h in data["evidence"] if h["doc_id"] == "linked/other.md"] in ([], [""])
    assert result.projection.items[0].url == url and data["projection"][0]["url"] == url
    payload = tool_payload(result)["results"]
    assert payload[0]["url"] == url and all("url" not in p for p in payload[1:])  # the model reads it only when set

    # an edited chunk keeps the link (every writer of rows derives it from the labels)
    edit_chunk(wb.store, wb.embedder, "linked/gateway.md#chunk-0", text="Rotate the zebra-lantern cert monthly.")
    assert wb.store.get_chunks("linked/gateway.md")[0].metadata["sourceUrl"] == url
    assert wb.retriever.lookup("zebra-lantern cert monthly").to_dict()["evidence"][0]["source_url"] == url


def test_access_groups_from_the_source_follow_it_unchanged_pages_included(tmp_path: Path, wb: Any) -> None:
    source, book = a_source("restricted", tmp_path)
    text = "# Payroll\n\nSalary bands for the platform team."
    first = Listed([item("payroll.md", text, "u1", groups=("hr", "finance")), item("open.md", "# Open\n\nhi", "u2")])
    sync(book.get("restricted"), first, wb.ingestor, book, max_delete_share=0.3)
    assert wb.store.labels.tags("restricted/payroll.md")["access"] == ["finance", "hr"]
    assert "access" not in wb.store.labels.tags("restricted/open.md")
    embedded = wb.embedder.embedded

    # restrictions change without a new version: the unchanged page is relabelled, nothing embedded
    second = Listed([item("payroll.md", text, "u1", groups=("hr",)), item("open.md", "# Open\n\nhi", "u2")])
    d = sync(book.get("restricted"), second, wb.ingestor, book, max_delete_share=0.3).to_dict()
    assert counts(d) == (0, 0, 2, 0, 0) and wb.embedder.embedded == embedded
    assert wb.store.labels.tags("restricted/payroll.md")["access"] == ["hr"]
    hidden = [c for c in wb.store.get_chunks("restricted/payroll.md")]
    assert all("access=hr" in c.labels and "access=finance" not in c.labels for c in hidden)

    # the restriction lifted: the groups the source gave are taken away
    third = Listed([item("payroll.md", text, "u1"), item("open.md", "# Open\n\nhi", "u2")])
    sync(book.get("restricted"), third, wb.ingestor, book, max_delete_share=0.3)
    assert "access" not in wb.store.labels.tags("restricted/payroll.md")
