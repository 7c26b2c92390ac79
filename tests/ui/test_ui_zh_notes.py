"""What rag_core says about how a document was read (its loader's notes, phrases of rag_core.retrieval.phrases), in
Chinese where the app shows it (AppTest, `?lang=zh`): the chunk preview's structure line and the ingest report."""

from __future__ import annotations

from tests.loaders.samples import workbook
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


def test_the_ingest_report_says_how_a_workbook_was_read_in_chinese(fresh_kb):
    at = app_at("pages/knowledge_base.py", lang="zh")
    uploader(at).set_value([("alerts.xlsx", workbook(), "application/octet-stream")])
    at.run()
    at.button(key="kb.ingest").click().run()
    assert not at.exception
    assert list(report_table(at)["notes"]) == [QA_SHEET]
