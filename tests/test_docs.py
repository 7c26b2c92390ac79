"""The documentation's links lead somewhere: every relative link of README.md, ARCHITECTURE.md, docs/*.md and
bench/README.md names a file of the repository and, with a `#fragment`, a heading of that page (as GitHub
spells heading anchors). Moving a section or renaming a page breaks a link; this says which."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import REPO

PAGES = [REPO / "README.md", REPO / "ARCHITECTURE.md", REPO / "bench" / "README.md",
         *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> list[str]:
    """The lines outside ``` fences (code blocks hold shell comments, not headings or links)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _prose(page.read_text(encoding="utf-8")):
        m = re.match(r"#{1,6} (.+)", line)
        if m:
            base = anchor(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def test_the_anchor_rule() -> None:
    assert anchor("Embedder trade-off (nDCG@10 vs BM25 alone, ingest speed)") == \
        "embedder-trade-off-ndcg10-vs-bm25-alone-ingest-speed"
    assert anchor("Documents, doc_ids and chunks") == "documents-doc_ids-and-chunks"


def test_the_readme_links_to_the_architecture_and_the_docs() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "(ARCHITECTURE.md)" in readme
    for page in sorted((REPO / "docs").glob("*.md")):
        assert f"(docs/{page.name})" in readme, f"README.md does not link to docs/{page.name}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for line in _prose(page.read_text(encoding="utf-8")):
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            path, _, fragment = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{target}: no such file")
            elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
                broken.append(f"{target}: no heading with that anchor")
    assert not broken, f"{page.relative_to(REPO)}: " + "; ".join(broken)
