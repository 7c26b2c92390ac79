"""Knowledge bases in the app (AppTest): create / copy / delete on the Knowledge base page, every page working
on the selected one, and the re-upload diff view. AppTest runs a page without app.py once it switched pages, so
the selection is read from session state here; the sidebar switcher itself is driven in a real browser
(tests/e2e/test_e2e_kbs.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import SAMPLE_KB
from tests.ui.apptest_helpers import app_at, texts
from ui.state import clear_workbench

pytestmark = pytest.mark.milvus  # opens Milvus Lite in its tests: not in `make test-unit`

KB_PAGE = "pages/knowledge_base.py"
DISK = ("disk_full.md", (SAMPLE_KB / "runbooks" / "disk_full.md").read_bytes(), "text/markdown")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    for var in [k for k in os.environ if k.startswith("RAG_") or k in ("DASHSCOPE_API_KEY", "OPENAI_API_KEY",
                                                                         "MILVUS_URI", "MILVUS_TOKEN")]:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(REPO)
    clear_workbench()
    yield tmp_path
    clear_workbench()


def upload(at, file: tuple[str, bytes, str]) -> None:
    (widget,) = [w for w in at.file_uploader if w.key.startswith("kb.files.")]
    widget.set_value([file])
    at.run()
    at.button(key="kb.ingest").click().run()
    assert not at.exception, at.exception


def selected(at) -> str:
    return at.session_state["kb"] if "kb" in at.session_state else "biz"


def names(at) -> list[str]:
    return list(frame(at, "knowledge base")["knowledge base"].str.replace(" (default)", ""))


def frame(at, column: str):
    (found,) = [d.value for d in at.dataframe if column in d.value.columns]
    return found


def test_two_knowledge_bases_made_in_the_app_both_answer(local_embedder) -> None:
    at = app_at(KB_PAGE)
    assert names(at) == ["biz"] and selected(at) == "biz"
    upload(at, DISK)
    biz_chunks = int(frame(at, "ingested at")["chunks"].iloc[0])

    at.text_input(key="kb.new_name").set_value("small").run()
    at.number_input(key="kb.new.chunk.max-size").set_value(300)
    at.number_input(key="kb.new.chunk.overlap").set_value(30)
    at.selectbox(key="kb.new.rag.expand").set_value("parent")
    at.number_input(key="kb.new.rag.context-tokens").set_value(3000)
    at.button(key="kb.create").click().run()
    assert not at.exception, at.exception
    assert "Created knowledge base small" in texts(at, "success")
    assert names(at) == ["biz", "small"] and selected(at) == "small"
    assert "No documents yet" in texts(at, "info")
    upload(at, DISK)
    small_chunks = int(frame(at, "ingested at")["chunks"].iloc[0])
    assert small_chunks > biz_chunks

    # every page works on the selected knowledge base: the debugger finds small's chunks
    for kb, chunks in (("small", small_chunks), ("biz", biz_chunks)):
        at.session_state["kb"] = kb
        at.switch_page("pages/debugger.py").run()
        at.text_input(key="q").set_value("How do I free disk space?").run()
        assert not at.exception, at.exception
        if kb == "small":  # the knowledge base's own settings
            assert (at.button_group(key="expand").value, at.number_input(key="context_tokens").value) == ("parent",
                                                                                                         3000)
        evidence = frame(at, "hit reasons")
        assert evidence["evidenceKey"].iloc[0].startswith("disk_full.md#chunk-")
        hits = frame(at, "dense #")["evidenceKey"]
        assert max(int(k.rsplit("-", 1)[1]) for k in hits) < chunks and (kb == "biz" or len(hits) == 20)
        at.switch_page(KB_PAGE).run()


def test_copy_then_delete_and_the_reupload_diff(local_embedder) -> None:
    at = app_at(KB_PAGE)
    upload(at, DISK)
    at.text_input(key="kb.copy_name").set_value("wide").run()
    at.number_input(key="kb.copy.chunk.max-size").set_value(1600)
    at.number_input(key="kb.copy.chunk.overlap").set_value(160)
    at.button(key="kb.copy").click().run()
    assert not at.exception, at.exception
    assert selected(at) == "wide"
    assert "Copied 1 of 1 documents into wide" in texts(at, "success")
    assert list(frame(at, "ingested at")["doc_id"]) == ["disk_full.md"]

    # a changed re-upload shows what changed in its chunks
    changed = ("disk_full.md", b"## Scope\n\nEvery node, every disk.\n\n" + DISK[1], "text/markdown")
    upload(at, changed)
    report = frame(at, "chunk changes")
    assert report["status"].iloc[0] == "replaced" and report["chunk changes"].iloc[0].startswith("+")
    [expander] = [e for e in at.expander if e.label.startswith("Changed chunks of disk_full.md")]
    assert "Scope" in "".join(str(h.proto.body) for h in expander.get("html"))

    at.text_input(key="kb.delete_name").set_value("wide").run()
    at.button(key="kb.delete_kb").click().run()
    assert not at.exception, at.exception
    assert names(at) == ["biz"] and selected(at) == "biz"
    assert "Deleted knowledge base wide" in texts(at, "success")


def test_an_unknown_knowledge_base_in_the_url_falls_back_to_the_default() -> None:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.query_params["kb"] = "nope"
    at.run()  # app.py itself (its sidebar): the switcher falls back and says so
    assert not at.exception, at.exception
    assert "`nope` does not exist" in texts(at, "warning") and at.selectbox(key="kb").value == "biz"


def html_of(at) -> str:
    return "".join(str(h.proto.body) for h in at.get("html"))


def test_debugger_compare_mode_marks_what_both_or_one_found(local_embedder) -> None:
    from ui.state import get_workbench, knowledge_bases

    knowledge_bases().create("small", {"chunk.max-size": 300, "chunk.overlap": 30})
    for name in ("biz", "small"):
        [report] = get_workbench(name).ingestor.ingest_paths([SAMPLE_KB / "runbooks" / "disk_full.md"])
        assert report.status == "added"
    # two knowledge bases chunked differently: matched by text, both timings shown
    at = app_at("pages/debugger.py", q="How do I free disk space?", compare="true", kb_b="small")
    assert at.toggle(key="compare").value and at.selectbox(key="kb_b").value == "small"
    shown = {m.label: m.value for m in at.metric}
    assert float(shown["A lookup ms"]) > 0 and float(shown["B lookup ms"]) > 0
    page = html_of(at)
    assert 'data-mark="both"' in page and "300/30" in texts(at, "info") and "≈ other side" in page
    assert not at.dataframe  # the single-lookup tables are not drawn in compare mode
    # the same knowledge base with a wider cap and return-n: B's extra evidence is "only B", A's all "both"
    at.selectbox(key="kb_b").set_value("biz").run()
    at.slider(key="cmp.biz.return_n").set_value(8)
    at.slider(key="cmp.biz.max_chunks_per_document").set_value(4).run()
    assert not at.exception, at.exception
    page = html_of(at)
    assert 'data-mark="only B"' in page and 'data-mark="only A"' not in page
    assert "return-n 8, cap 4" in texts(at, "caption") and "return-n 5, cap 2" in texts(at, "caption")
    at.button_group(key="cmp.biz.expand").set_value("parent")
    at.number_input(key="cmp.biz.context_tokens").set_value(2000).run()
    assert not at.exception, at.exception
    assert "blocks grown to parent, 2,000 tokens at most" in texts(at, "caption")
    # a link naming a knowledge base that does not exist says so and compares with the selected one
    at = app_at("pages/debugger.py", q="disk", compare="true", kb_b="nope")
    assert "`nope` does not exist" in texts(at, "warning") and at.selectbox(key="kb_b").value == "biz"
