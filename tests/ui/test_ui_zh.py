"""The app in Chinese (AppTest, `?lang=zh`): the home, knowledge base, chunk preview and chat pages, the navigation
and the sidebar show Chinese titles, labels and buttons; the language switcher; errors from rag_core shown by type
and code in Chinese with the original English text in an expander (ui/errors.py)."""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from tests.servers.chat import OpenAIChatServer
from tests.ui.apptest_helpers import app_at, texts
from ui.i18n import catalog

# Words that stay as they are in Chinese text: names, units, codes, setting names, file names, example values.
KEPT = re.compile(r"`[^`]*`|\{[^}]*\}|https?://\S+|:material/\w+:|\b(RAG|Milvus|Lite|BM25|RRF|JSON|OCR|PDF|MB|KB|"
                  r"DashScope|OpenAI|retrieve-k|return-n|Language|runbooks|en|zh|token)\b|\b\w+_\w+\b|\b\w+(\.[\w-]+)+|"
                  r"\w+=\w*")
ENGLISH = re.compile(r"[A-Za-z]{3,}")
CJK = re.compile(r"[\u4e00-\u9fff]")


def labels(at: AppTest) -> list[str]:
    """What a person reads as the page's structure: headings, widget labels and placeholders, tab, expander and
    metric labels, button texts, info boxes."""
    out = [str(e.value) for kind in ("title", "header", "subheader", "info") for e in getattr(at, kind)]
    for kind in ("button", "selectbox", "multiselect", "text_input", "text_area", "toggle", "slider", "checkbox",
                 "radio", "number_input", "tabs", "expander", "metric", "segmented_control", "chat_input"):
        for e in getattr(at, kind):
            out.append(str(e.label) if kind != "chat_input" else str(e.proto.placeholder))
            if kind in ("text_input", "multiselect") and e.proto.placeholder:
                out.append(str(e.proto.placeholder))
    out += [e.proto.label for e in at.get("page_link")]
    return [text for text in out if text]


def english(at: AppTest, *names: str) -> list[str]:
    """The labels with English words left in them (codes, product names and `names`, e.g. the knowledge base's,
    aside)."""
    found = []
    for text in labels(at):
        rest = KEPT.sub("", text)
        for name in names:
            rest = rest.replace(name, "")
        if ENGLISH.search(rest):
            found.append(text)
    return found


def test_home_in_chinese(kb):
    at = app_at(lang="zh")
    assert at.title[0].value == "🧰 RAG 工作台"
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["文档"] == str(len(kb.store.list_documents())) and metrics["对话模式"] == "离线"
    assert english(at) == []
    assert "离线模式" in texts(at, "info")
    sidebar = at.sidebar
    assert sidebar.selectbox(key="kb").label == "知识库" and sidebar.segmented_control(key="lang").value == "zh"
    assert "对话：**离线**" in texts(sidebar, "caption")


def test_knowledge_base_page_in_chinese(kb):
    at = app_at("pages/knowledge_base.py", lang="zh")
    assert at.title[0].value == "📚 知识库"
    assert at.button(key="kb.reindex_all").label == "全部重建索引"
    assert [tab.label for tab in at.tabs][:1] == ["新建"]
    assert english(at, kb.settings.kb_name) == []
    assert "分块 800/100 · " in texts(at) and "每文档上限 2" in texts(at)  # the knowledge base's settings
    assert at.number_input(key="kb.new.chunk.max-size").help == "每个分块的最大字符数（含重叠）。"


def test_the_knowledge_base_summary_in_english_is_rag_cores(kb):
    from rag_core.kb.settings import describe

    assert describe(kb.kb) in texts(app_at("pages/knowledge_base.py"))


def test_chunk_preview_in_chinese_keeps_its_option_values(kb):
    at = app_at("pages/chunk_preview.py", lang="zh")
    assert at.title[0].value == "✂️ 分块预览"
    source = at.segmented_control(key="cp.source")
    assert source.value == "Indexed document"  # the value (in the URL) stays; only what is shown is translated
    assert english(at) == []
    assert CJK.search(texts(at, "caption"))


def _ask(at: AppTest, question: str) -> AppTest:
    at.chat_input(key="chat.input").set_value(question).run()
    assert not at.exception, at.exception
    return at


def test_chat_page_in_chinese(kb):
    at = app_at("pages/chat.py", lang="zh")
    assert at.title[0].value == "💬 智能体对话"
    assert at.button(key="chat.clear").label == "清空对话"
    assert at.chat_input(key="chat.input").proto.placeholder == "询问运维手册、告警、制度…"
    assert english(at) == []
    _ask(at, "磁盘满了怎么清理？")
    (status,) = at.status
    assert status.label.startswith("🔎 检索了知识库：“磁盘满了怎么清理？”") and "条证据" in status.label
    assert "条命中" in texts(status, "caption")


@pytest.fixture
def failing_chat_model(monkeypatch):
    with OpenAIChatServer() as server:
        for name, value in {"RAG_CHAT_PROVIDER": "openai", "RAG_CHAT_BASE_URL": server.base_url,
                            "RAG_CHAT_MODEL": "test-chat", "RAG_CHAT_MAX_RETRIES": "0",
                            "OPENAI_API_KEY": "sk-chat-test"}.items():
            monkeypatch.setenv(name, value)
        server.reply(server.server_error(500))
        yield server


def test_a_chat_error_in_chinese_keeps_the_original(kb, failing_chat_model):
    at = _ask(app_at("pages/chat.py", lang="zh"), "随便问问")
    assert [e.value for e in at.error] == [catalog("zh")["The service failed: try again later."]]
    assert "HTTP 500" in at.expander[-1].code[0].value


def _page_titles() -> None:
    import streamlit as st

    from ui.navigation import pages

    st.session_state["titles"] = [p.title for p in pages()]


def test_the_navigation_in_chinese():
    at = AppTest.from_function(_page_titles, default_timeout=30)
    at.query_params["lang"] = "zh"
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["titles"] == ["首页", "知识库", "分块预览", "召回调试", "智能体对话", "评测", "失败案例"]


def test_the_switcher_changes_the_language(kb):
    # Only app.py's first run draws the sidebar under AppTest (a rerun runs the page alone): the switching itself,
    # with the other URL parameters and the page links, is tests/e2e/test_e2e_zh.py.
    at = app_at()
    assert at.title[0].value == "🧰 RAG workbench"
    assert at.sidebar.segmented_control(key="lang").label == "Language / 语言"
    at.sidebar.segmented_control(key="lang").set_value("zh").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "🧰 RAG 工作台" and at.session_state["lang"] == "zh"


def test_the_browser_language_is_the_default(kb, monkeypatch):
    import ui.i18n

    monkeypatch.setattr(ui.i18n, "browser_language", lambda: "zh")
    at = app_at()
    assert at.title[0].value == "🧰 RAG 工作台" and at.sidebar.segmented_control(key="lang").value == "zh"
    at = app_at(lang="en")  # the URL (a choice) wins over the browser
    assert at.title[0].value == "🧰 RAG workbench"


def _chunking_error(at: AppTest) -> AppTest:
    at.slider(key="cp.max_size").set_value(50).run()
    at.slider(key="cp.overlap").set_value(100).run()
    assert not at.exception, at.exception
    return at


def test_a_rag_error_is_shown_by_its_type_in_chinese_with_the_original_in_an_expander(kb):
    at = _chunking_error(app_at("pages/chunk_preview.py", lang="zh"))
    assert [e.value for e in at.error] == ["分块参数无效：重叠必须小于分块大小上限。"]
    original = next(e for e in at.expander if e.label == "原始信息（英文，反馈问题时使用）")
    code = original.code[0].value
    assert "overlap" in code and not CJK.search(code)  # rag_core's own English message, for a bug report

    at = _chunking_error(app_at("pages/chunk_preview.py"))  # in English the message is the original itself
    assert len(at.error) == 1 and at.error[0].value == code
    assert not [e for e in at.expander if e.label.startswith("Original message")]


def _errors_by_code() -> None:
    from rag_core.errors import KnowledgeBaseError, LoaderError, RemoteError, RerankError, StoreLockedError
    from rag_core.records import IngestReport
    from ui.errors import show_chat_error, show_error, show_report_error

    show_error(LoaderError("big.pdf: 30 MB is over loader.max-file-mb (20)", code="too_large"))
    show_error(KnowledgeBaseError("knowledge base 'x' exists already", code="exists"))
    show_error(RerankError("reranker at http://127.0.0.1:9 timed out after 5 s", kind="timeout"))
    show_error(RemoteError("Prometheus said 401", kind="auth"))
    show_error(StoreLockedError("data/milvus.db is locked by pid 42"))
    show_report_error(IngestReport("scan.png", "scan.png", "failed", error="scan.png: needs OCR",
                                   error_code="needs_ocr"))
    show_chat_error("The chat model at http://127.0.0.1:9 refused the key", "auth")


def test_errors_are_translated_by_code_and_type():
    at = AppTest.from_function(_errors_by_code, default_timeout=30)
    at.query_params["lang"] = "zh"
    at.run()
    assert not at.exception, at.exception
    zh = catalog("zh")
    assert [e.value for e in at.error] == [
        zh["The file is larger than the limit (`loader.max-file-mb`)."],
        zh["A knowledge base with this name exists already: pick another name."],
        "重排序模型：" + zh["The service did not answer in time: try again later, or ask a narrower question."],
        "远程服务：" + zh["The service refused the credentials: check the API key."],
        zh["The database file is in use by another process (the CLI, the HTTP API or another app): stop it and try "
           "again."],
        "**scan.png**：" + zh["An image or a scanned PDF: reading it needs the OCR extra."],
        zh["The service refused the credentials: check the API key."],
    ]
    assert [e.code[0].value for e in at.expander] == [
        "big.pdf: 30 MB is over loader.max-file-mb (20)", "knowledge base 'x' exists already",
        "reranker at http://127.0.0.1:9 timed out after 5 s", "Prometheus said 401",
        "data/milvus.db is locked by pid 42", "scan.png: needs OCR",
        "The chat model at http://127.0.0.1:9 refused the key"]


def test_the_settings_help_in_the_catalog_is_the_settings_own():
    from rag_core.config import KEYS
    from ui.kbs import SETTING_HELP

    assert {key: text for key, text in SETTING_HELP.items() if text != KEYS[key].help} == {}
    assert all(key in catalog("zh") for key in SETTING_HELP.values())


def test_the_debugger_s_url_values_hold_in_chinese(kb):
    """Widgets bound to the URL keep their codes as options (a translated label would become the URL's value, and a
    link's `mode=dense` would be ignored in Chinese)."""
    at = app_at("pages/debugger.py", lang="zh", q="disk full", mode="dense", fusion="rrf")
    assert at.segmented_control(key="mode").value == "dense" and at.segmented_control(key="fusion").value == "rrf"
    assert at.query_params["mode"] in ("dense", ["dense"])
