"""A synced source's document links to where it lives: in the debugger's hit list and a chat citation's popover
(ui/html.source_link_html), a web address as a link opening a new tab, anything else as text, never markup."""

from __future__ import annotations

from ui.hits import hit_row_html
from ui.html import source_link_html


def test_a_web_address_is_a_link_to_a_new_tab_and_other_addresses_are_text() -> None:
    link = source_link_html("https://wiki.example.com/pages/42?a=1&b=2")
    assert link.startswith('<a class="source-link" href="https://wiki.example.com/pages/42?a=1&amp;b=2"')
    assert 'target="_blank"' in link and 'rel="noopener noreferrer"' in link and "at the source" in link
    for other in ("file:///srv/runbooks/disk.md", "javascript:alert(1)", "repo@abc123:docs/a.md"):
        shown = source_link_html(other)
        assert "<a " not in shown and shown.startswith('<span class="source-link"')
    assert source_link_html('https://x.example/"><script>').count("<script>") == 0
    assert source_link_html("") == ""


def test_a_hit_row_links_to_its_source_only_when_it_has_one() -> None:
    hit = {"rank": 1, "fate": "kept", "evidence_key": "wiki/a.html#chunk-0", "score": 0.5, "content": "text"}
    assert "source-link" not in hit_row_html(hit, [])
    row = hit_row_html({**hit, "source_url": "https://wiki.example.com/a"}, [])
    assert 'href="https://wiki.example.com/a"' in row
