"""A folder source kept in sync (issue 38): a folder of real documents (SciFact abstracts and CMRC 2018 passages
written as .md files) added as a `folder` source of a fresh knowledge base, synced through rag_core.sources as
`python -m rag_core sources sync` does, with the local embedder counting the texts it embeds.

Measured in one run: the first sync; a second with nothing changed (target: nothing embedded, under 10% of the
first's time); 10 files changed (target: only their chunks embedded); 10 files deleted and 10 added.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import fmt, log, main, ratio, record_and_print, section, table
from bench.ingest import documents
from rag_core.bootstrap import build_source_book, build_workbench
from rag_core.config import load_settings
from rag_core.embedding.local import LocalUSEEmbedder
from rag_core.sources.book import Source
from rag_core.sources.sync import sync
from rag_core.sources.types import build_reader

FOLDER = "docs"  # where the source's documents go in the knowledge base
CHANGED = 10
UNCHANGED_TARGET = 0.10  # the unchanged sync's time / the first's


class Counting:
    """An embedder counting the texts it embeds for documents."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.embedded = 0

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def corpus(n: int) -> list[tuple[str, str]]:
    """`n` + CHANGED documents as (file name, text): four fifths SciFact, one fifth CMRC 2018; the last CHANGED
    are kept back for the 'added' step."""
    total = n + CHANGED
    chinese = total // 5
    docs = documents("scifact", total - chinese) + documents("cmrc2018", chinese)
    return [(f"{d.doc_id.replace('/', '_')}.md", d.text) for d in docs]


def measure(n: int) -> dict[str, Any]:
    embedder = Counting(LocalUSEEmbedder())
    embedder.embed_documents(["warm up"])
    docs = corpus(n)
    kept, extra = docs[:n], docs[n:]
    with tempfile.TemporaryDirectory() as tmp:
        root, data = Path(tmp) / "folder", Path(tmp) / "data"
        root.mkdir()
        for name, text in kept:
            (root / name).write_text(text, encoding="utf-8")
        settings = load_settings(data_dir=data, env={}, config_file=None,
                                 overrides={"milvus.lite-mode": "exclusive"})
        book = build_source_book(settings, env={})
        book.add(Source("bench", settings.kb_name, "folder", str(root), FOLDER))
        wb = build_workbench(settings, env={}, embedder=embedder)
        try:
            def step() -> dict[str, Any]:
                source = book.get("bench")
                before = embedder.embedded
                started = time.perf_counter()
                reader = build_reader(source.type, source.location, source.options,
                                      {p: seen.get("version", "") for p, seen in source.indexed.items()},
                                      cache_dir=data / "sources-cache")
                d = sync(source, reader, wb.ingestor, book,
                         max_delete_share=settings["sources.max-delete-share"]).to_dict()
                out = {k: d[k] for k in ("added", "replaced", "unchanged", "deleted", "failed")}
                return {**out, "seconds": time.perf_counter() - started, "embedded": embedder.embedded - before}

            def chunks_of(names: Sequence[str]) -> int:
                wanted = {f"{FOLDER}/{name}" for name in names}
                return sum(d.chunks for d in wb.store.list_documents() if d.doc_id in wanted)

            log(f"sources: first sync of {n} documents ...")
            first = step()
            first["chunks"] = chunks_of([name for name, _ in kept])
            log("sources: unchanged ...")
            unchanged = step()
            changed_names = [kept[i][0] for i in range(0, n, n // CHANGED)][:CHANGED]
            for name in changed_names:
                with (root / name).open("a", encoding="utf-8") as fh:
                    fh.write("\n\nRevised: this document was changed at the source.\n")
            log(f"sources: {CHANGED} changed ...")
            changed = step()
            changed["chunks_of_changed"] = chunks_of(changed_names)
            deleted_names = [kept[i][0] for i in range(1, n, n // CHANGED)][:CHANGED]
            for name in deleted_names:
                (root / name).unlink()
            for name, text in extra:
                (root / name).write_text(text, encoding="utf-8")
            log(f"sources: {CHANGED} deleted, {CHANGED} added ...")
            moved = step()
            moved["chunks_of_added"] = chunks_of([name for name, _ in extra])
        finally:
            wb.close()
    return {"documents": n, "changed": CHANGED, "embedder": embedder.name, "first": first, "unchanged": unchanged,
            "changed_files": changed, "deleted_added": moved}


def targets(record: dict[str, Any]) -> dict[str, bool]:
    """Issue 38's targets, met or not."""
    first, same, changed = record["first"], record["unchanged"], record["changed_files"]
    return {"unchanged embeds nothing": same["embedded"] == 0,
            f"unchanged under {UNCHANGED_TARGET:.0%} of the first":
                same["seconds"] < UNCHANGED_TARGET * first["seconds"],
            "changed embeds only their chunks": changed["embedded"] == changed["chunks_of_changed"]}


def render(record: dict[str, Any]) -> str:
    first, n, k = record["first"], record["documents"], record["changed"]
    steps = (("first sync", first, first["chunks"]),
             ("nothing changed", record["unchanged"], 0),
             (f"{k} files changed", record["changed_files"], record["changed_files"]["chunks_of_changed"]),
             (f"{k} deleted, {k} added", record["deleted_added"], record["deleted_added"]["chunks_of_added"]))
    rows = [[label, s["seconds"], ratio(s["seconds"], first["seconds"]), s["embedded"], chunks,
             f"{s['added']} / {s['replaced']} / {s['unchanged']} / {s['deleted']} / {s['failed']}"]
            for label, s, chunks in steps]
    md = table(["sync", "seconds", "ratio to the first", "texts embedded", "chunks of the files changed or added",
                "added / replaced / unchanged / deleted / failed"], rows, 3)
    met = "; ".join(f"{name}: {'met' if ok else 'NOT met'}" for name, ok in targets(record).items())
    md += (f"\n\nA `folder` source of {fmt(n)} .md files ({fmt(first['chunks'])} chunks; SciFact abstracts and CMRC "
           f"2018 passages) in a fresh knowledge base (Milvus Lite, {record['embedder']}), synced through "
           f"`rag_core.sources.sync` as `python -m rag_core sources sync` does, timed from building the reader to "
           f"the sync's end; the embedder counts the texts it embeds. Targets (issue 38): {met}.")
    return section("A folder source kept in sync: unchanged and changed files", md, record)


def run(quick: bool = False) -> str:
    return record_and_print("sources", quick, measure(60 if quick else 1000), render)


if __name__ == "__main__":
    main(run, __doc__)
