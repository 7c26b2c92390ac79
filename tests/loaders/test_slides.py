"""PowerPoint decks: one section per slide headed by its title, bullets, tables, speaker notes, slide numbers."""

from __future__ import annotations

from rag_core.loaders import load_bytes
from rag_core.records import SLIDE
from tests.loaders.checks import chunks_of
from tests.loaders.samples import deck

DECK_TEXT = """# Incident 2025-03-01: payment errors

- Error rate rose to 7% for 20 minutes
   - Only zone B was affected

Notes: Start with the timeline; the pager fired at 14:02.

# Timeline

| Time | Event |
|---|---|
| 14:02 | Pager fired |
| 14:10 | Rollback started |
| 14:22 | Errors back to 0.1% |

Notes: The rollback took twelve minutes.

# Action items

Notes: Owners: Li Wei for the canary, Ana for the alert threshold."""


def test_three_slides_with_notes() -> None:
    doc = load_bytes(deck(), "reviews/incident.pptx")
    assert doc.text == DECK_TEXT
    assert (doc.extension, doc.encoding) == ("pptx", "pptx")
    assert [(p.unit, p.number, doc.text[p.offset:p.offset + 12]) for p in doc.places] == [
        (SLIDE, 1, "# Incident 2"), (SLIDE, 2, "# Timeline\n\n"), (SLIDE, 3, "# Action ite")]
    whole = chunks_of(doc, 800, 100)
    assert [c.location.label for c in whole] == ["slide 1", "slide 2", "slide 3"]  # a slide is a section
    assert [c.title for c in whole] == ["Incident 2025-03-01: payment errors", "Timeline", "Action items"]
    small = chunks_of(doc, 60, 10)
    assert {c.location.label for c in small} == {"slide 1", "slide 2", "slide 3"}
    assert all(c.location.first == c.location.last for c in small)  # sections never share a chunk
