"""A sync killed midway (issue 38): `python -m rag_core sources sync` in a real process, SIGKILLed once it has
committed some of the changed documents but not all, leaves each document of the source whole, as it was or as it
is now at the source, never mixed; the chunk edits and tags of an unchanged document stay; the sync lock it held
does not block the next sync, which finishes the work and says what it did; a third sync embeds nothing.

"Midway" is read from the killed sync's own progress (the CLI's bar on stderr names each file `done` once its
batch is committed), never from a sleep: it is killed at the first file done, while its second batch of
sync.BATCH is being read, embedded or written (in practice: read or embedded), its last not begun."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.sources import Counting
from rag_core.bootstrap import build_source_book
from rag_core.config import load_settings
from rag_core.kb.chunk_edits import edit_chunk, set_disabled
from rag_core.kb.tags import tag
from rag_core.sources import sync as sync_module
from rag_core.sources.manage import sync_source
from tests.helpers import REPO, make_workbench, run_cli

pytestmark = pytest.mark.milvus

N = 72  # files at the first sync: doc000.md ... doc071.md
UNCHANGED = [i for i in range(N) if i % 7 == 0]  # 11 files left as they are
DELETED = [5, 33, 61, 71]  # 4 of 72: within sources.max-delete-share
MODIFIED = [i for i in range(N) if i not in UNCHANGED and i not in DELETED]  # 57
ADDED = [f"doc{i:03d}a.md" for i in UNCHANGED]  # 11 new files, listed between the others
LATE = 69  # a modified file in the last batch, never begun by the killed sync
WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa".split()
MARK = re.compile(r"\bk(\w+?)s(\d)(old|new)\b")
DONE = re.compile(r"\[(\d+)/(\d+)\] done ")


def text(name: str, version: str) -> str:
    """A small Markdown file of three sections (three chunks or so), each word of it naming its file, section and
    version (`k017s2new`), so any chunk says which file and version it comes from."""
    key = name.removeprefix("doc").removesuffix(".md")
    sections = [f"## Section {s}\n\n" + " ".join(f"k{key}s{s}{version} {WORDS[(len(key) + s + j) % len(WORDS)]}"
                                                  for j in range(25)) for s in range(3)]
    return f"# File {key} ({version})\n\n" + "\n\n".join(sections) + "\n"


def name(i: int) -> str:
    return f"doc{i:03d}.md"


def chunks_by_doc(wb: Any) -> dict[str, list[tuple[int, str]]]:
    return {d.doc_id: [(c.chunk_index, c.content) for c in wb.store.get_chunks(d.doc_id)]
            for d in wb.store.list_documents() if d.doc_id.startswith("src/")}


def whole_version(doc_id: str, chunks: list[tuple[int, str]], indexed_chunks: int) -> str:
    """'old' or 'new': the one version every chunk of `doc_id` comes from, with every section of that version's file
    and its chunks numbered 0..n-1 as the registry counts them; an AssertionError when the document is mixed or
    half-written."""
    key = doc_id.removeprefix("src/doc").removesuffix(".md")
    marks = {m for _, content in chunks for m in MARK.findall(content)}
    versions = {v for _, _, v in marks}
    assert len(versions) == 1, (doc_id, sorted(marks))  # never the old and the new version's chunks at once
    (version,) = versions
    assert {(k, s) for k, s, _ in marks} == {(key, str(s)) for s in range(3)}, (doc_id, sorted(marks))  # whole
    assert [i for i, _ in chunks] == list(range(len(chunks))) == list(range(indexed_chunks)), doc_id
    return version


def counts(d: dict[str, Any]) -> tuple[int, ...]:
    return tuple(d[k] for k in ("added", "replaced", "unchanged", "deleted", "failed"))


def killed_midway(data: Path) -> tuple[int, str]:
    """`sources sync src` in a process of its own, SIGKILLed at the first file its progress names done (its first
    batch committed). The batch size its bar showed, and its stderr so far."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "rag_core", "--data-dir", str(data), "sources", "sync", "src"],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    seen = b""
    try:
        while not (done := DONE.search(seen.decode("utf-8", "replace"))):
            chunk = os.read(proc.stderr.fileno(), 65536)  # blocks until the bar is drawn again (or the end)
            assert chunk, f"the sync ended before any file was done: {seen.decode()[-2000:]}"
            seen += chunk
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=60)
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    return int(done.group(2)), seen.decode("utf-8", "replace")


def test_a_sync_killed_midway_leaves_each_document_old_or_new_and_the_next_sync_finishes(
        tmp_path: Path, local_embedder: Any, capsys: pytest.CaptureFixture[str]) -> None:
    data, folder = tmp_path / "data", tmp_path / "runbooks"
    folder.mkdir()
    for i in range(N):
        (folder / name(i)).write_text(text(name(i), "old"), encoding="utf-8")
    assert run_cli(data, capsys, "sources", "add", "biz", "folder", str(folder), "--name", "src")[0] == 0
    code, out, err = run_cli(data, capsys, "sources", "sync", "src", "--json", "--quiet")
    assert code == 0 and counts(json.loads(out)) == (N, 0, 0, 0, 0), err

    # A person's changes to an unchanged document and to a changed one: they must outlive the kill and the syncs.
    kept, changed = f"src/{name(7)}", f"src/{name(50)}"
    wb = make_workbench(data, local_embedder)
    try:
        set_disabled(wb.store, f"{kept}#chunk-1", True)
        edit_chunk(wb.store, wb.embedder, f"{kept}#chunk-2", keywords=["frobnicate"])
        tag(wb.store, kept, ["team=sre"])
        tag(wb.store, changed, ["team=db"])
        old = chunks_by_doc(wb)
        edits_before = wb.store.edits.all()
    finally:
        wb.close()
    assert len(old) == N and all(len(c) >= 3 for c in old.values())

    for i in MODIFIED:
        (folder / name(i)).write_text(text(name(i), "new"), encoding="utf-8")
    for added in ADDED:
        (folder / added).write_text(text(added, "new"), encoding="utf-8")
    for i in DELETED:
        (folder / name(i)).unlink()
    listed = [name(i) for i in range(N) if i not in DELETED] + ADDED
    to_write = len(MODIFIED) + len(ADDED)
    assert to_write > 2 * sync_module.BATCH  # a first batch to commit, a second to kill, a third never begun

    batch, progress = killed_midway(data)
    assert batch == sync_module.BATCH, progress[-2000:]

    # The knowledge base as the killed sync left it, opened as the next process would.
    settings = load_settings(data_dir=data, env={}, config_file=None)
    book = build_source_book(settings)
    source = book.get("src")
    assert len(source.indexed) == N and counts(source.status) == (N, 0, 0, 0, 0)  # its book: the last whole sync's
    assert source.status["running_since"]  # shown as a sync that has not finished, not as the last one that did
    with book.sync_lock(source)(wait=False) as free:
        assert free  # the killed sync's lock went with its process
    wb = make_workbench(data, local_embedder)
    try:
        midway = chunks_by_doc(wb)
        indexed = wb.store.fingerprints(midway)
        versions = {doc_id: whole_version(doc_id, chunks, indexed[doc_id].chunks) for doc_id, chunks in midway.items()}
        for doc_id, version in versions.items():
            if version == "old":
                assert midway[doc_id] == old[doc_id], doc_id  # as it was, to the character
        new_now = sorted(d for d, v in versions.items() if v == "new")
        assert set(new_now) <= {f"src/{n}" for n in [name(i) for i in MODIFIED] + ADDED}
        assert sync_module.BATCH <= len(new_now) <= to_write - 1  # some written, not all
        assert sorted(d for d in midway if d.removeprefix("src/") in ADDED) == [
            d for d in new_now if d.removeprefix("src/") in ADDED]  # an added one is there whole or not at all
        assert {f"src/{name(i)}" for i in DELETED} <= set(midway)  # deletions come after the writes: not yet
        assert versions[kept] == "old" and midway[kept] == old[kept] and wb.store.edits.all() == edits_before
        assert f"{kept}#chunk-1" in wb.store.disabled_keys(wb.store.get_chunks(kept))
        assert wb.store.labels.tags(kept)["team"] == ["sre"] and wb.store.labels.tags(changed)["team"] == ["db"]
        for doc_id in (new_now[0], new_now[-1], f"src/{name(LATE)}", f"src/{name(DELETED[0])}"):
            word = f"k{doc_id.removeprefix('src/doc').removesuffix('.md')}s0{versions[doc_id]}"
            hits = wb.retriever.lookup(word).evidence
            assert hits and hits[0].doc_id == doc_id and word in hits[0].content, (doc_id, word)
        stale = f"k{LATE:03d}s0{'new' if versions[f'src/{name(LATE)}'] == 'old' else 'old'}"
        assert not any(stale in h.content for h in wb.retriever.lookup(stale).evidence)  # no other version seen
    finally:
        wb.close()

    # The next sync finishes the work, and counts what it did itself.
    code, out, err = run_cli(data, capsys, "sources", "sync", "src", "--json", "--quiet")
    second = json.loads(out)
    assert code == 0 and second["ok"], err
    still_old = [d for d in midway if versions[d] == "old" and d.removeprefix("src/") in
                 {name(i) for i in MODIFIED}]
    missing = [f"src/{a}" for a in ADDED if f"src/{a}" not in midway]
    assert counts(second) == (len(missing), len(still_old), len(listed) - len(missing) - len(still_old),
                              len(DELETED), 0)
    assert sorted(second["changes"]["added"]) == missing and sorted(second["changes"]["replaced"]) == still_old
    assert sorted(second["changes"]["deleted"]) == [f"src/{name(i)}" for i in DELETED]

    counting = Counting(local_embedder)
    wb = make_workbench(data, counting)
    try:
        final = chunks_by_doc(wb)
        assert sorted(final) == sorted(f"src/{n}" for n in listed)
        indexed = wb.store.fingerprints(final)
        for doc_id, chunks in final.items():
            want = "old" if doc_id.removeprefix("src/") in {name(i) for i in UNCHANGED} else "new"
            assert whole_version(doc_id, chunks, indexed[doc_id].chunks) == want, doc_id
        for doc_id in new_now:  # what the killed sync wrote was kept, not written again
            assert final[doc_id] == midway[doc_id], doc_id
        assert final[kept] == old[kept] and wb.store.edits.all() == edits_before
        every = wb.store.labels.tags_by_document()
        for doc_id in final:
            assert every.get(doc_id, {}).get("source") == ["src"], doc_id
            assert every[doc_id]["source_url"] == [(folder / doc_id.removeprefix("src/")).as_uri()], doc_id
        assert every[kept]["team"] == ["sre"] and every[changed]["team"] == ["db"]
        book = build_source_book(settings)
        source = book.get("src")
        assert sorted(source.indexed) == sorted(listed) and counts(source.status) == counts(second)
        assert "running_since" not in source.status

        # A third sync: nothing changed, nothing embedded.
        third = sync_source(settings, book, source, wb.ingestor).to_dict()
        assert counts(third) == (0, 0, len(listed), 0, 0) and counting.embedded == 0
    finally:
        wb.close()


def test_documents_a_killed_sync_wrote_but_never_recorded_get_their_source_tags_from_the_next(
        tmp_path: Path, local_embedder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed after its writes, before it tagged them and saved its record: the next sync finds the documents
    unchanged (nothing embedded) and still tags them with their source."""
    from rag_core.sources.manage import new_source

    data, folder = tmp_path / "data", tmp_path / "runbooks"
    folder.mkdir()
    for i in range(3):
        (folder / name(i)).write_text(text(name(i), "new"), encoding="utf-8")
    settings = load_settings(data_dir=data, env={}, config_file=None, overrides={"milvus.lite-mode": "exclusive"})
    book = build_source_book(settings)
    book.add(new_source(settings, "biz", "folder", str(folder), {}, name="src"))
    counting = Counting(local_embedder)
    wb = make_workbench(data, counting)
    try:
        def killed(*_: Any) -> None:
            raise KeyboardInterrupt  # the process dies between its last batch and tagging what it wrote

        monkeypatch.setattr(sync_module, "_tag_provenance", killed)
        with pytest.raises(KeyboardInterrupt):
            sync_source(settings, book, book.get("src"), wb.ingestor)
        monkeypatch.undo()
        docs = [f"src/{name(i)}" for i in range(3)]
        assert sorted(chunks_by_doc(wb)) == docs and book.get("src").indexed == {}
        assert all("source" not in wb.store.labels.tags(d) for d in docs)

        embedded = counting.embedded
        result = sync_source(settings, book, book.get("src"), wb.ingestor).to_dict()
        assert counts(result) == (0, 0, 3, 0, 0) and counting.embedded == embedded
        for i, doc_id in enumerate(docs):
            assert wb.store.labels.tags(doc_id) == {"source": ["src"], "source_url": [(folder / name(i)).as_uri()]}
        assert sorted(book.get("src").indexed) == [name(i) for i in range(3)]
    finally:
        wb.close()
