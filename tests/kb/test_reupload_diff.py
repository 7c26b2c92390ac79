"""Re-upload diffs: re-ingesting a changed document reports chunks added, removed and unchanged by content
hash, on constructed edits (the Ingestor over the in-memory store, and once over Milvus Lite through the CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core.chunk_diff import chunk_diff, text_hash
from rag_core.chunking import chunk_text
from rag_core.cli import main
from rag_core.ingest import Ingestor
from rag_core.store.memory import InMemoryChunkStore
from tests.fakes.embedder import FakeEmbedder


def section(title: str, n: int) -> str:
    body = "\n\n".join(f"{title} paragraph {i}: " + f"the {title.lower()} steps are explained here in order. " * 4
                       for i in range(n))
    return f"## {title}\n\n{body}\n\n"


BASE = section("Triage", 3) + section("Mitigation", 3) + section("Follow-up", 2)
TOP = section("Scope", 1)  # a paragraph (with its heading) to insert at the top


def ingestor() -> Ingestor:
    store = InMemoryChunkStore()
    embedder = FakeEmbedder()
    store.open(embedder.name, embedder.dim)
    return Ingestor(store, embedder, max_size=300, overlap=40)


def upload(ing: Ingestor, text: str):
    [report] = ing.ingest_uploads([("runbook.md", text.encode())])
    return report


def test_a_section_inserted_at_the_top_shifts_indexes_but_not_content() -> None:
    ing = ingestor()
    first = upload(ing, BASE)
    assert first.status == "added" and first.diff is None
    edited = TOP + BASE
    report = upload(ing, edited)
    old = chunk_text(BASE, 300, 40)
    new = chunk_text(edited, 300, 40)
    assert report.status == "replaced" and report.chunks == len(new)
    diff = report.diff
    # The chunks of the new section are added; every old chunk is still there (at a higher index).
    assert diff.unchanged == len(old) and not diff.removed
    assert len(diff.added) == len(new) - len(old) and all("Scope" in c.text for c in diff.added)
    assert [c.chunk_index for c in diff.added] == list(range(len(diff.added)))
    assert {c.hash for c in diff.added} == {text_hash(c.text) for c in new[:len(diff.added)]}
    assert report.to_dict()["diff"]["added"] == len(diff.added)


def test_an_edited_paragraph_and_a_removed_section() -> None:
    ing = ingestor()
    upload(ing, BASE)
    edited = BASE.replace("Mitigation paragraph 1:", "Mitigation paragraph 1 (revised):").replace(
        section("Follow-up", 2), "")
    diff = upload(ing, edited).diff
    old, new = chunk_text(BASE, 300, 40), chunk_text(edited, 300, 40)
    assert diff.unchanged + len(diff.added) == len(new) and diff.unchanged + len(diff.removed) == len(old)
    assert any("revised" in c.text for c in diff.added) and not any("revised" in c.text for c in diff.removed)
    assert any("Follow-up" in c.text for c in diff.removed) and not any("Follow-up" in c.text for c in diff.added)


def test_an_unchanged_reupload_stays_unchanged() -> None:
    ing = ingestor()
    upload(ing, BASE)
    report = upload(ing, BASE)
    assert report.status == "unchanged" and report.diff.unchanged == report.chunks
    assert not report.diff.added and not report.diff.removed


def test_repeated_chunks_count_as_a_multiset() -> None:
    a = chunk_text("# A\n\nsame text here.\n\n# B\n\nsame text here.\n\n# C\n\nother.\n", 20, 0)
    stored = [type("S", (), {"metadata": {}, "content": c.text, "chunk_index": c.chunk_index})() for c in a]
    b = chunk_text("# A\n\nsame text here.\n\n# C\n\nother.\n", 20, 0)
    diff = chunk_diff(stored, b)
    assert diff.unchanged == len(b) and len(diff.removed) == len(a) - len(b) and not diff.added


@pytest.mark.milvus
def test_cli_json_reports_the_diff(tmp_path: Path, capsys, local_embedder) -> None:
    doc = tmp_path / "runbook.md"
    doc.write_text(BASE, encoding="utf-8")
    data = tmp_path / "data"
    assert main(["--data-dir", str(data), "--set", "chunk.max-size=300", "--set", "chunk.overlap=40",
                 "ingest", str(doc), "--quiet"]) == 0
    capsys.readouterr()
    doc.write_text(TOP + BASE, encoding="utf-8")
    assert main(["--data-dir", str(data), "ingest", str(doc), "--quiet", "--json"]) == 0
    [report] = json.loads(capsys.readouterr().out)
    assert report["status"] == "replaced" and report["diff"]["removed"] == 0
    assert report["diff"]["unchanged"] == len(chunk_text(BASE, 300, 40)) and report["diff"]["added"] >= 1
    assert all("Scope" in c["text"] for c in report["diff"]["added_chunks"])
    assert main(["--data-dir", str(data), "ingest", str(doc), "--quiet"]) == 0
    assert capsys.readouterr().out.startswith("unchanged runbook.md")
