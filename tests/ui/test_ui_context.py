"""The context stages on the page (AppTest): the debugger's expansion, merge and token-budget controls bound to the
URL and re-running no search; the Context tab's blocks grown to their parent section with the matched chunks marked,
the token bar and what a budget left out; merged hits counted; a chat citation of a hit inside a merged block opening
that block."""

from __future__ import annotations

import re

from rag_core.retrieval.expand import ExpandParams
from tests.ui.apptest_helpers import app_at, texts
from tests.ui.test_ui_debugger import frames, metrics, searches  # noqa: F401 - the fixture, used by name

PAGE = "pages/debugger.py"
QUERY = "CPU usage high alert"  # in the sample knowledge base its best hits, cpu_high.md's chunks 0 and 2, merge


def context_html(at) -> str:
    (body,) = [h.proto.body for h in at.get("html") if 'class="context-blocks"' in h.proto.body]
    return body


def budget_html(at) -> str:
    (body,) = [h.proto.body for h in at.get("html") if 'class="context-budget"' in h.proto.body]
    return body


def test_the_context_controls_are_bound_to_the_url_and_run_no_new_search(kb, searches):  # noqa: F811
    at = app_at(PAGE, q=QUERY, expand="parent", parent_max_size="3000", block_tokens="1500", context_tokens="3000")
    assert not at.exception, at.exception
    assert at.button_group(key="expand").value == "parent"
    assert (at.number_input(key="parent_max_size").value, at.number_input(key="block_tokens").value,
            at.number_input(key="context_tokens").value) == (3000, 1500, 3000)
    assert at.slider(key="expand_neighbours").disabled and not at.number_input(key="parent_max_size").disabled
    assert at.toggle(key="merge").value is True  # rag.merge's default
    assert 'data-budget="3000"' in budget_html(at)
    assert searches == {"dense": 1, "bm25": 1}
    # the assemble phase only: another expansion, no merge, a smaller budget reuse the fetched hits
    at.button_group(key="expand").set_value("neighbours").run()
    assert not at.slider(key="expand_neighbours").disabled and at.number_input(key="parent_max_size").disabled
    at.slider(key="expand_neighbours").set_value(2).run()
    at.toggle(key="merge").set_value(False).run()
    at.number_input(key="context_tokens").set_value(500).run()
    assert not at.exception, at.exception
    assert searches == {"dense": 1, "bm25": 1}
    assert "Hits reused from the previous search" in texts(at, "caption")
    body = context_html(at)
    assert 'data-grew="neighbours"' in body and "2 neighbouring chunks on each side" in body
    assert "hits merged into this block" not in body
    assert "Left out by the projection budgets" in texts(at, "warning")  # 500 tokens hold fewer blocks
    assert "projection total tokens (500)" in texts(at, "warning")
    # the same values from the URL: the same blocks
    again = app_at(PAGE, q=QUERY, expand="neighbours", expand_neighbours="2", merge="false", context_tokens="500")
    assert (again.button_group(key="expand").value, again.slider(key="expand_neighbours").value,
            again.toggle(key="merge").value, again.number_input(key="context_tokens").value) == ("neighbours", 2,
                                                                                                  False, 500)
    assert context_html(again) == body


def test_expand_parent_shows_grown_blocks_with_the_matched_chunks_marked_and_the_token_bar(kb):
    expected = kb.retriever.lookup(QUERY, expand=ExpandParams("parent")).to_dict()
    at = app_at(PAGE, q=QUERY, expand="parent")
    assert not at.exception, at.exception
    tabs = [tab.label for tab in at.tabs]
    assert f"Context ({len(expected['blocks'])})" in tabs
    body = context_html(at)
    keys = re.findall(r'class="context-block" data-key="([^"]+)"', body)
    assert keys == [b["key"] for b in expected["blocks"]]
    merged = expected["blocks"][0]  # chunks 0 and 2 of the CPU runbook, grown to chunks 0-3
    assert merged["key"] == "cpu_high.md#chunk-0..2" and merged["range"] == [0, 3]
    assert "chunks 0, 2 → chunks 0–3, parent section &#x27;Runbook: CPU Usage High&#x27;" in body
    assert "2 hits merged into this block:" in body
    assert body.count('<mark class="matched"') >= len(expected["blocks"])
    first = merged["highlights"][0]
    marked = re.search(r'<mark class="matched"[^>]*>([^<]*)</mark>', body)
    assert marked is not None and marked.group(1).startswith(merged["content"][first[0]:first[0] + 20]
                                                              .replace("&", "&amp;").replace("'", "&#x27;"))
    assert 'data-grew="parent"' in body and 'data-grew="none"' not in body
    bar = budget_html(at)
    tokens = expected["context"]["tokens"]
    assert f'data-used="{tokens}" data-budget="6000"' in bar
    assert f"{tokens:,} of 6,000 tokens" in bar and "counted with qwen" in bar
    # without expansion nothing grows; the merge of neighbouring hits still shows
    at = app_at(PAGE, q=QUERY)
    assert 'data-grew="parent"' not in context_html(at) and "(not expanded)" in context_html(at)


def test_merged_hits_have_their_fate_and_are_counted(kb):
    expected = kb.retriever.lookup(QUERY, expand=ExpandParams("parent")).to_dict()
    n = [h["fate"] for h in expected["raw_hits"]].count("merged")
    assert n >= 1
    at = app_at(PAGE, q=QUERY, expand="parent")
    hits, _ = frames(at)
    assert list(hits["fate"]).count("merged") == n
    assert metrics(at)["Merged"] == str(n)
    assert f"{n} merged" in texts(at, "caption")  # the summary's dropped counts
    (rows,) = [h.proto.body for h in at.get("html") if "hit-list" in h.proto.body]
    assert rows.count('data-fate="merged"') == n


def test_a_citation_of_a_hit_inside_a_merged_block_opens_the_block_with_its_chunk_marked(kb):
    from rag_core.agent.turn import AssistantTurn, ToolStep

    lookup = kb.retriever.lookup(QUERY, expand=ExpandParams("parent")).to_dict()
    block = lookup["blocks"][0]
    member = block["matched"][1]  # cpu_high.md#chunk-2, dropped as merged into the block
    assert member == "cpu_high.md#chunk-2" and member not in {e["evidence_key"] for e in lookup["evidence"]}
    step = ToolStep("call-1", "search_knowledge_base", {"query": QUERY}, "", ok=True, lookup=lookup)
    turn = AssistantTurn(parts=[step, f"Check the top processes [{member}] and [{block['key']}]."],
                         citations=(member, block["key"]))
    at = app_at("pages/chat.py")
    at.session_state["chat.turns"] = [(QUERY, turn)]
    at.run()
    assert not at.exception, at.exception
    popovers = at.get("popover")
    assert [p.proto.popover.label for p in popovers] == [member, block["key"]]
    for popover, marks, said in zip(popovers, (1, 2), ("The cited chunk, marked", "The chunks found, marked")):
        (body,) = [h.value for h in popover.get("html") if "context-block" in h.value]
        assert body.count('<mark class="matched"') == marks  # the member's chunk alone; the block's every one
        assert '<span class="block-section">Runbook: CPU Usage High</span>' in body  # the section named
        assert "chunks 0, 2 → chunks 0–3, parent section &#x27;Runbook: CPU Usage High&#x27;" in body
        assert texts(popover, "caption").startswith(said)
    start, end = block["highlights"][1]  # chunk 2's text, marked in the member's popover
    (body,) = [h.value for h in popovers[0].get("html") if "context-block" in h.value]
    marked = re.search(r'<mark class="matched"[^>]*>([^<]{0,30})', body)
    assert marked is not None and block["content"][start:end].startswith(marked.group(1)[:15])


def test_the_context_controls_and_tab_in_chinese_show_no_english_label(kb):
    from tests.ui.test_i18n_pages import untranslated

    at = app_at(PAGE, q=QUERY, expand="parent", context_tokens="300", lang="zh")  # 300 tokens: a block left out
    assert "上下文" in at.tabs[2].label and at.warning  # the tab, and what the budget left out
    data = {QUERY, "parent", "neighbours", *(d.doc_id for d in kb.store.list_documents())}
    # (the raw hits table's frame keeps a `fate` column it does not show: its rows' colours)
    assert [x for x in untranslated(at.main, data) if x != "table header: 'fate' (fate)"] == []
