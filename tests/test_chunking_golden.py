"""Golden tests: the sample knowledge base's chunk boundaries, recorded and compared exactly.

Each golden file under tests/golden/chunking/ holds, per document, its length, sha256, chunk count
and one row per chunk: [start, end, heading_path_text, overlap_chars, boundary].

A change to the chunker (or to a sample document) shows up here as a diff. When the change is
intended, regenerate and review the JSON diff before committing:

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_chunking_golden.py

Documents: every .md/.txt under examples/kb/ plus the edge-case fixtures in
tests/golden/chunking/fixtures/ (fences with `#` lines, heading-only runs, long CJK paragraphs ...).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from rag_core.chunking import BOUNDARY_OVERLAP, chunk_text
from rag_core.records import Chunk

ROOT = Path(__file__).resolve().parent.parent
KB_DIR = ROOT / "examples" / "kb"
GOLDEN_DIR = Path(__file__).resolve().parent / "golden" / "chunking"
FIXTURE_DIR = GOLDEN_DIR / "fixtures"
PARAMS = [(800, 100), (300, 60)]  # the defaults, and a small size that exercises overlap a lot
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
REGENERATE = "UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_chunking_golden.py"


def _documents() -> dict[str, str]:
    docs: dict[str, str] = {}
    for base, prefix in ((KB_DIR, "examples/kb/"), (FIXTURE_DIR, "fixtures/")):
        if base.is_dir():
            for path in sorted(base.rglob("*")):
                if path.suffix in (".md", ".txt") and path.is_file():
                    docs[prefix + path.relative_to(base).as_posix()] = path.read_text(encoding="utf-8")
    return docs


DOCS = _documents()
KB_DOCS = {name: text for name, text in DOCS.items() if name.startswith("examples/kb/")}


def _record(text: str, chunks: list[Chunk]) -> dict[str, Any]:
    return {
        "chars": len(text),
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "chunk_count": len(chunks),
        "chunks": [[c.start, c.end, c.heading_path_text, c.overlap_chars, c.boundary] for c in chunks],
    }


def _dump(golden: dict[str, Any]) -> str:
    """JSON with one chunk per line, so a reviewer's diff shows exactly which boundaries moved."""
    lines = ["{", f'  "params": {json.dumps(golden["params"])},', '  "documents": {']
    names = list(golden["documents"])
    for i, name in enumerate(names):
        doc = golden["documents"][name]
        rows = [f"        {json.dumps(row, ensure_ascii=False)}" for row in doc["chunks"]]
        lines += [
            f"    {json.dumps(name)}: {{",
            f'      "chars": {doc["chars"]},',
            f'      "sha256": {json.dumps(doc["sha256"])},',
            f'      "chunk_count": {doc["chunk_count"]},',
            '      "chunks": [',
            ",\n".join(rows),
            "      ]",
            "    }" + ("," if i + 1 < len(names) else ""),
        ]
    lines += ["  }", "}", ""]
    return "\n".join(line for line in lines if line)


def _golden_path(max_size: int, overlap: int) -> Path:
    return GOLDEN_DIR / f"chunks_{max_size}_{overlap}.json"


@pytest.mark.parametrize(("max_size", "overlap"), PARAMS)
def test_chunk_boundaries_match_golden(max_size: int, overlap: int) -> None:
    assert DOCS, "no sample documents found"
    actual = {
        "params": {"max_size": max_size, "overlap": overlap},
        "documents": {name: _record(text, chunk_text(text, max_size, overlap)) for name, text in DOCS.items()},
    }
    path = _golden_path(max_size, overlap)
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_dump(actual), encoding="utf-8")
    assert path.exists(), f"{path} is missing; create it with: {REGENERATE}"
    expected = json.loads(path.read_text(encoding="utf-8"))
    assert expected["params"] == actual["params"]
    assert sorted(expected["documents"]) == sorted(actual["documents"]), (
        f"the set of sample documents changed; if intended, run: {REGENERATE}"
    )
    for name, want in expected["documents"].items():
        got = actual["documents"][name]
        if want["sha256"] != got["sha256"]:
            pytest.fail(f"{name} changed since the golden file was written; review and run: {REGENERATE}")
        assert got["chunk_count"] == want["chunk_count"], f"{name}: chunk count changed ({REGENERATE})"
        for row_got, row_want in zip(got["chunks"], want["chunks"]):
            assert row_got == row_want, f"{name}: first differing chunk (start, end, path, overlap, boundary)"


# --- invariants on the sample documents --------------------------------------------------------

_NAIVE_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)$", re.MULTILINE)
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_CLOSING = re.compile(r"(?:^|\s+)#+\s*$")


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _fenced_line_starts(text: str) -> set[int]:
    """Offsets of lines inside fenced code blocks, found independently of rag_core.chunking."""
    inside: set[int] = set()
    fence = ""
    pos = 0
    for line in text.split("\n"):
        match = _FENCE_LINE.match(line)
        if fence:
            if (
                match
                and match.group(1)[0] == fence[0]
                and len(match.group(1)) >= len(fence)
                and not match.group(2).strip()
            ):
                fence = ""
            else:
                inside.add(pos)
        elif match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
            fence = match.group(1)
        pos += len(line) + 1
    return inside


@pytest.mark.parametrize("name", sorted(DOCS))
@pytest.mark.parametrize(("max_size", "overlap"), PARAMS)
def test_sample_document_invariants(name: str, max_size: int, overlap: int) -> None:
    text = DOCS[name]
    chunks = chunk_text(text, max_size, overlap)
    assert chunks
    covered = bytearray(len(text))
    for i, c in enumerate(chunks):
        assert c.chunk_index == i
        assert text[c.start : c.end] == c.text
        assert len(c.text) <= max_size
        covered[c.start : c.end] = b"\x01" * (c.end - c.start)
        if i:
            assert c.overlap_chars == max(0, chunks[i - 1].end - c.start)
            assert (c.boundary == BOUNDARY_OVERLAP) == (c.overlap_chars > 0)
    assert all(covered[k] for k, ch in enumerate(text) if not ch.isspace())

    # No heading path may come from a `#` line inside a code fence.
    fenced = _fenced_line_starts(text)
    headings = [(_line_start(text, m.start()), m.group(1).strip()) for m in _NAIVE_HEADING.finditer(text)]
    real = {_CLOSING.sub("", title) for start, title in headings if start not in fenced}
    fake = {title for start, title in headings if start in fenced} - real
    for c in chunks:
        assert set(c.heading_path) <= real, f"chunk {c.chunk_index} has a heading that is not a real heading"
        assert not set(c.heading_path) & fake, f"chunk {c.chunk_index} took a heading from a code fence"
        if c.boundary in ("first", "section") and c.heading_path:
            # A section's first chunk starts at a heading line outside any fence.
            assert text[c.start] == "#" and _line_start(text, c.start) not in fenced


def test_sample_kb_has_a_long_document_and_fenced_comments() -> None:
    if not KB_DOCS:
        pytest.skip("examples/kb/ is not there; the fixtures alone are checked")
    counts = {name: len(chunk_text(text, 800, 100)) for name, text in KB_DOCS.items()}
    assert max(counts.values()) >= 10, counts
    # The fence check above is only meaningful if some sample has `#` lines inside code fences.
    assert any(text[s:].lstrip(" ").startswith("#") for text in KB_DOCS.values() for s in _fenced_line_starts(text))
    # Both languages are represented.
    assert any(re.search(r"[\u4e00-\u9fff]{20}", t) for t in KB_DOCS.values())
    assert any(re.search(r"(?:[A-Za-z]+[ ,.]+){30}", t) for t in KB_DOCS.values())


def test_fixture_exercises_the_edge_cases() -> None:
    text = DOCS["fixtures/edge_cases.md"]
    chunks = chunk_text(text, 300, 60)
    paths = [c.heading_path_text for c in chunks]
    assert "Edge Cases > Empty Parent > Only Child" in paths
    assert "Edge Cases > Empty Parent" not in paths  # heading-only section joined its child
    assert paths[-1] == "Edge Cases > Trailing Empty Section"  # nothing to join: its own chunk
    assert "Edge Cases > Closing Hashes" in paths
    assert any(c.boundary == BOUNDARY_OVERLAP and "中文长段落" in c.heading_path_text for c in chunks)
