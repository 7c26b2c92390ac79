"""What rag_core says (phrases of rag_core.phrases) in Chinese where the app shows it (AppTest, `?lang=zh`):
how a document was read (its loader's notes) on the chunk preview and in the ingest report; which chat model answers
on the chat page."""

from __future__ import annotations

from tests.loaders.samples import workbook
from tests.servers.chat import OpenAIChatServer
from tests.ui.apptest_helpers import app_at, texts
from tests.ui.test_ui_knowledge_base import report_table, uploader

QA_SHEET = "问答工作表：FAQ（问题 / 答案）"


def test_the_chunk_preview_says_how_a_workbook_was_read_in_chinese(kb):
    at = app_at("pages/chunk_preview.py", lang="zh")
    at.segmented_control(key="cp.source").set_value("上传文件").run()  # AppTest sets a choice by its label
    at.file_uploader(key="cp.upload").set_value(("faq.xlsx", workbook(), "application/octet-stream")).run()
    assert not at.exception
    caption = texts(at, "caption")
    assert QA_SHEET in caption and "Q&A sheet" not in caption
    cards = [h.value for h in at.html if 'class="chunk-card"' in h.value]
    assert "#0 工作表 Alerts，第 1–5 行" in cards[0] and not any("sheet" in c for c in cards)


def test_the_ingest_report_says_how_a_workbook_was_read_in_chinese(fresh_kb):
    at = app_at("pages/knowledge_base.py", lang="zh")
    uploader(at).set_value([("alerts.xlsx", workbook(), "application/octet-stream")])
    at.run()
    at.button(key="kb.ingest").click().run()
    assert not at.exception
    assert list(report_table(at)["notes"]) == [QA_SHEET]


def test_the_chat_page_names_its_model_in_chinese(kb, monkeypatch):
    with OpenAIChatServer() as server:
        for name, value in {"RAG_CHAT_PROVIDER": "openai", "RAG_CHAT_BASE_URL": server.base_url,
                            "RAG_CHAT_MODEL": "test-chat", "OPENAI_API_KEY": "sk-chat-test"}.items():
            monkeypatch.setenv(name, value)
        at = app_at("pages/chat.py", lang="zh")
        assert not at.exception
        caption = texts(at, "caption")
        assert f"test-chat，经由 OpenAI 兼容（{server.base_url}）" in caption and " via " not in caption
