"""Running headers and footers (issue 39, part 2): how many chunks still hold a line repeated at the top or bottom of
the pages, before (the format's extractor alone, as `load_bytes` read a PDF until now) and after (`load_bytes`, which
leaves them out: rag_core/loaders/running.py), on two generated PDFs (tests/loaders/running_samples.py): a manual in
Chinese (its title on every page, "第 N 页" at the bottom, a title page) and a policy in English ("Untitled N" at the
top, "Company Confidential" and "Page N of M" at the bottom, drawn after the body); the pages whose own sentence is
cited on the right page, and pages per second both ways, in the same run.

`measure_running(quick)` returns the figures (bench/formats.py shows them); `python -m bench.docs_running` prints
them without saving a record.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from bench.common import best_of, table
from rag_core.chunking import DEFAULT_MAX_SIZE, DEFAULT_OVERLAP, chunk_document
from rag_core.loaders import LoadOptions, load_bytes
from rag_core.loaders.extracted import Extracted
from rag_core.loaders.formats import BY_EXTENSION
from rag_core.loaders.limits import DEFAULT_MAX_TEXT_CHARS, TextBudget
from rag_core.loaders.load import content_hash
from rag_core.loaders.running import drop_running
from rag_core.records import Document
from tests.loaders.running_samples import en_marker, manual_pdf, policy_pdf, running_lines, zh_marker


def extract(data: bytes, name: str) -> Extracted:
    ext = name.rsplit(".", 1)[-1]
    return BY_EXTENSION[ext].extract(data, name, ext, TextBudget(name, DEFAULT_MAX_TEXT_CHARS), LoadOptions())


def without_the_step(data: bytes, name: str) -> Document:
    """The document as the format's extractor reads it, running lines and all (before)."""
    ext = name.rsplit(".", 1)[-1]
    extracted = extract(data, name)
    return Document(name, extracted.text, name, ext, len(data), content_hash(extracted.text, extracted.places),
                    extracted.encoding, extracted.places)


def score(doc: Document, running: set[str], markers: dict[int, str], max_size: int, overlap: int) -> dict[str, Any]:
    """Chunks holding a running line (the title page's own title not counted), the running lines they hold, and
    the pages whose own sentence is in a chunk that cites that page."""
    chunks = chunk_document(doc, max_size, overlap)
    after = doc.places[1].offset if markers and min(markers) > 1 else 0  # the manual's page 1 is only its title
    held = [sum(line.strip() in running for line in doc.text[max(c.start, after):c.end].split("\n")) for c in chunks]
    cited = 0
    for page, marker in markers.items():
        at = doc.text.find(marker)
        cited += any(c.start <= at < c.end and c.location is not None and c.location.first <= page <= c.location.last
                     for c in chunks)
    return {"chunks": len(chunks), "chunks_with_running": sum(n > 0 for n in held), "running_lines_left": sum(held),
            "pages_cited_right": cited}


def measure_running(quick: bool = False) -> dict[str, Any]:
    """{"samples": [one row per generated PDF and way (before/after; after with `step_ms`, the milliseconds of the
    step alone)], "max_size", "overlap"}."""
    manual_pages, policy_pages = (12, 10) if quick else (40, 42)
    samples: list[tuple[str, str, bytes, set[str], dict[int, str]]] = [
        ("manual (Chinese)", "manual.pdf", manual_pdf(manual_pages, "chinese"), running_lines("chinese", manual_pages),
         {p: zh_marker(p) for p in range(2, manual_pages + 1)}),
        ("policy (English)", "policy.pdf", policy_pdf(policy_pages), running_lines("policy", policy_pages),
         {p: en_marker(p) for p in range(1, policy_pages + 1)}),
    ]
    ways: list[tuple[str, Callable[[bytes, str], Document]]] = [
        ("before", without_the_step), ("after", load_bytes)]
    rows = []
    for sample, name, data, running, markers in samples:
        for way, read in ways:
            seconds, doc = best_of(partial(read, data, name), 2 if quick else 3)
            rows.append({"sample": sample, "way": way, "pages": len(doc.places), "pages_s": len(doc.places) / seconds,
                         "notes": list(doc.notes), "markers": len(markers),
                         **score(doc, running, markers, DEFAULT_MAX_SIZE, DEFAULT_OVERLAP)})
        extracted = extract(data, name)
        rows[-1]["step_ms"] = best_of(lambda: drop_running(extracted), 5)[0] * 1000  # the step alone
    return {"samples": rows, "max_size": DEFAULT_MAX_SIZE, "overlap": DEFAULT_OVERLAP}


def render_running(figures: dict[str, Any]) -> str:
    rows = [[r["sample"], r["way"], r["pages"], f"{r['chunks_with_running']}/{r['chunks']}", r["running_lines_left"],
             f"{r['pages_cited_right']}/{r['markers']}", r["pages_s"], r.get("step_ms", "")]
            for r in figures["samples"]]
    return table(["document", "", "pages", "chunks with a running line", "running lines left",
                  "page sentences cited right", "pages/s", "ms of the step"], rows, 1) + (
        f"\n\nChunks {figures['max_size']}/{figures['overlap']}; before: the PDF extractor alone, after: `load_bytes` "
        "(rag_core/loaders/running.py).")


if __name__ == "__main__":
    import sys

    print(render_running(measure_running("--quick" in sys.argv[1:])))
