"""A PDF line that Markdown would read as a heading or a code fence (a shell comment, a sample) stays text."""

from __future__ import annotations

from rag_core.loaders import load_bytes
from tests.loaders.checks import chunks_of
from tests.loaders.samples import text_pdf


def test_a_line_starting_with_a_hash_is_no_heading() -> None:
    page = "Edit the globs file:\n# This file was generated. DO NOT EDIT!\n```\ntext/x-diff:*.patch\n## not a heading"
    doc = load_bytes(text_pdf([page, "The second page."]), "spec.pdf")
    assert doc.text.splitlines()[:5] == ["Edit the globs file:", "\\# This file was generated. DO NOT EDIT!", "\\```",
                                         "text/x-diff:*.patch", "\\## not a heading"]
    assert doc.text[doc.places[1].offset:] == "The second page."  # the places count the escapes
    assert all(c.heading_path == () for c in chunks_of(doc, 60, 0))
