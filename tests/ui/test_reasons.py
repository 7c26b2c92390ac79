"""The words that come from rag_core in the user's language (ui/reasons.py): every phrase code of
rag_core.phrases renders in English exactly as the CLI says it and in Chinese with its parameters; an
unknown code shows as the code; drop reasons and fates in both languages; debugger links carry the language."""

from __future__ import annotations

import re
import string
from collections.abc import Iterator
from typing import Any

import pytest
import streamlit as st

from rag_core.phrases import ENGLISH, Phrase, english, joined
from rag_core.retrieval import KnowledgeRetriever
from rag_core.retrieval.explain import explain
from tests.retrieval.memory import InMemorySearchPort
from tests.retrieval.test_explain import DOCS, PARAMS
from ui import reasons
from ui.i18n import LANG_PARAM
from ui.lookup import debugger_query_params


@pytest.fixture
def lang() -> Iterator[Any]:
    """Sets this (bare-mode) session's language; English again afterwards."""
    def choose(code: str) -> None:
        st.session_state[LANG_PARAM] = code

    yield choose
    st.session_state.pop(LANG_PARAM, None)


def sample(code: str) -> dict[str, Any]:
    """Parameters for every field of `code`'s English text: numbers where it formats numbers, else a marker."""
    params: dict[str, Any] = {}
    for _, name, spec, _ in string.Formatter().parse(ENGLISH[code]):
        if name:
            params[name] = 0.125 if spec and spec[-1] in "fg%" else 12345 if spec == "," else f"«{name}»"
    return params


def test_the_app_knows_every_code_rag_core_says():
    assert set(ENGLISH) == reasons.CODES


@pytest.mark.parametrize("code", sorted(ENGLISH))
def test_every_code_renders_in_both_languages(code, lang):
    params = sample(code)
    said = Phrase(code, params)
    assert reasons.phrase(said) == english(said) == reasons.phrase(said.to_dict())  # the app's English is the CLI's
    lang("zh")
    zh = reasons.phrase(said.to_dict())
    assert zh != code and "{" not in zh
    assert all(v in zh for v in params.values() if isinstance(v, str))  # every parameter is shown
    if re.search(r"[A-Za-z]", re.sub(r"\{[^}]*\}", "", ENGLISH[code])):  # words, not only placeholders
        assert zh != english(said) and any("\u4e00" <= c <= "\u9fff" for c in zh), zh


def test_an_unknown_code_or_wrong_parameters_show_the_code(lang):
    for chosen in ("en", "zh"):
        lang(chosen)
        assert reasons.phrase({"code": "fate.something_new", "params": {"x": 1}}) == "fate.something_new"
        assert reasons.phrase({"code": "fate.kept", "params": {}}) == "fate.kept"  # {rank} missing
        assert reasons.phrase(None, "the JSON's English") == "the JSON's English"  # a result saved before phrases
        nested = joined("sentences", [Phrase("verdict.fix", {"fix": Phrase("new.code"), "target": "a#chunk-1"})])
        assert "new.code" in reasons.phrase(nested.to_dict()) and "a#chunk-1" in reasons.phrase(nested.to_dict())
    assert english(Phrase("fate.something_new")) == "fate.something_new"


def test_a_real_explanation_reads_in_chinese(lang):
    port = InMemorySearchPort(DOCS)
    data = explain(KnowledgeRetriever(port), port.store, "alpha", "many.md#chunk-2", **PARAMS).to_dict()
    assert reasons.phrase(data["verdict_phrase"]) == data["verdict"]
    lang("zh")
    verdict = reasons.phrase(data["verdict_phrase"])
    assert verdict == ("many.md#chunk-2 不在证据中。最接近的是 many.md#chunk-2：被每文档上限（2）丢弃："
                       "many.md#chunk-0、many.md#chunk-1 排在它前面。最小改动：max-chunks-per-document ≥ 3，"
                       "return-n ≥ 4，可召回 many.md#chunk-2。")
    causes = [reasons.phrase(c["cause_phrase"]) for c in data["chunks"]]
    assert causes[0] == "在证据中（#1）" and causes[2].startswith("被每文档上限（2）丢弃")


DROPS = [None, {"kind": "duplicate", "key": "a#chunk-1"}, {"kind": "doc_cap", "doc_id": "a.md", "count": 2,
         "by": ["a#chunk-0", "a#chunk-3"]}, {"kind": "beyond_return_n", "count": 5},
         {"kind": "below_threshold", "score": 0.5, "threshold": 0.55}, {"kind": "disabled", "key": "a#chunk-1"}]


def test_drop_reasons_and_fates_in_both_languages(lang):
    english_reasons = [reasons.describe_drop(d) for d in DROPS]
    assert english_reasons == ["kept", "duplicate of a#chunk-1",
                               "per-document cap: a.md already has 2 (`a#chunk-0`, `a#chunk-3`)", "beyond return-n (5)",
                               "below threshold (0.50 < 0.55)", "disabled"]
    fates = ["kept", "duplicate", "doc_cap", "beyond_return_n", "below_threshold", "disabled", "beyond_retrieve_k",
             "no_channel"]
    english_fates = [reasons.fate_label(f) for f in fates]
    lang("zh")
    assert [reasons.describe_drop(d) for d in DROPS] == [
        "保留", "与 a#chunk-1 重复", "每文档上限：a.md 已有 2 个（`a#chunk-0`、`a#chunk-3`）", "超出 return-n（5）",
        "低于阈值（0.50 < 0.55）", "已停用"]
    assert reasons.describe_drop(DROPS[2], short=True) == "每文档上限（2）"
    assert all(zh != en for zh, en in zip(map(reasons.fate_label, fates), english_fates))
    assert reasons.describe_drop({"kind": "something new"}) == "something new"
    assert reasons.fate_label("something_new") == "something_new"


def test_debugger_links_carry_a_chosen_language(lang):
    assert "lang" not in debugger_query_params("q")  # the browser's language needs no parameter
    lang("en")
    assert "lang" not in debugger_query_params("q")  # chosen, but the browser's (English without a browser)
    lang("zh")
    assert debugger_query_params("q", kb="small") == {"q": "q", "lang": "zh", "kb": "small"}
    assert debugger_query_params("q", lang="en")["lang"] == "en"  # an explicit one wins


def test_every_code_of_the_embedder_trade_off_is_worded() -> None:
    from rag_core.embedding.catalog import SUMMARY_CODES, load
    from ui.components import TRADEOFF_SAYS, set_label

    assert set(TRADEOFF_SAYS) == SUMMARY_CODES
    data = load()
    assert data is not None and all(code in SUMMARY_CODES for p in data.profiles for code, _ in p.summary)
    assert set_label("SciFact (100 q)") == "SciFact (100 queries)" and set_label("odd") == "odd"


# ------------------------------------------------------------------------- how a document was read, what a reranker did
def test_a_loader_s_notes_are_phrases_whose_english_is_the_note(lang, monkeypatch) -> None:
    import sys

    from rag_core.loaders import load_bytes
    from tests.loaders.samples import mixed_pdf, render_page, workbook

    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)  # as if the OCR extra were not installed
    pdf = load_bytes(mixed_pdf("A page with a text layer.", render_page(size=(600, 300), font_px=24)), "mixed.pdf")
    sheet = load_bytes(workbook(), "faq.xlsx")
    for doc in (pdf, sheet):
        assert [p.code for p in doc.note_phrases] and [english(p) for p in doc.note_phrases] == list(doc.notes)
        assert reasons.notes(doc) == list(doc.notes)  # English: as the CLI says it
    lang("zh")
    assert reasons.notes(pdf) == ['第 2 页没有文本层，未读取：OCR 需要可选依赖（pip install ".[ocr]"）']
    assert reasons.notes(sheet) == ["问答工作表：FAQ（问题 / 答案）"]


def test_notes_without_phrases_are_shown_as_they_are(lang) -> None:
    from rag_core.records import IngestReport

    lang("zh")  # a report from a service older than the phrases: its English notes
    assert reasons.notes(IngestReport("a.pdf", "a.pdf", "added", notes=("OCR'd page 2",))) == ["OCR'd page 2"]


def test_a_reranker_s_notes_in_chinese(lang) -> None:
    from rag_core.rerank.dashscope import DashScopeReranker
    from rag_core.rerank.tei import TEIReranker
    from tests.servers.rerank import DashScopeRerankServer, TEIRerankServer

    key = "sk-rerank-SECRET-0c9d2e"
    for server in DashScopeRerankServer(api_key=key).serve():
        docs = [f"document {i} about disk space" for i in range(1200)] + ["disk " * 20_000]
        dashscope = DashScopeReranker(key, base_url=f"{server.url}/api/v1").rerank("disk space", docs)
    for server in TEIRerankServer().serve():
        tei = TEIReranker(server.url, "bge-reranker-base").rerank("disk", [f"disk {i}" for i in range(70)])
    for result in (dashscope, tei):
        assert [english(p) for p in result.note_phrases] == list(result.notes) != []
    lang("zh")
    assert reasons.notes(dashscope) == [
        "1 篇文档被截断为约 4,000 个 token（DashScope 服务的单文档上限）",
        "分 3 次请求发送：DashScope 服务的上限为 500 篇文档、约 30,000 个 token（每次请求）"]
    assert reasons.notes(tei) == [
        "分 3 次请求发送：TEI 默认的 --max-client-batch-size 设置的上限为 32 篇文档（每次请求）"]


def test_what_the_projection_left_out_in_chinese(lang) -> None:
    from rag_core.retrieval.projection import Budgets, project
    from tests.retrieval.test_projection import block

    blocks = [block("d#chunk-0", "d", "x" * 500), block("d#chunk-0", "d", "x" * 500),
              block("d#chunk-1", "d", "z" * 500), block("d#chunk-2", "d", "y"), block("d#chunk-3", "d", "w"),
              block("d#chunk-4", "d", "v")]
    out = project(blocks, Budgets(max_items=3, max_chars_per_item=100, max_total_chars=120))
    assert [english(r) for r in out.reasons] == [r for _, r in out.left_out] == [
        "duplicate evidence key", "projection total characters (120)", "projection max items (3)"]
    lang("zh")
    assert [reasons.phrase(r.to_dict()) for r in out.reasons] == [
        "证据键重复", "投影总字符数上限（120）", "投影条数上限（3）"]


def test_where_a_chunk_is_in_both_languages(lang) -> None:
    from rag_core.records import IMAGE, PAGE, ROW, SLIDE, Location

    places = [Location(PAGE, 12, 12), Location(PAGE, 12, 13, ocr=True), Location(SLIDE, 3, 3),
              Location(ROW, 4, 7, sheet="FAQ"), Location(IMAGE, 1, 1, ocr=True)]
    assert [reasons.location_label(p) for p in places] == [
        "p. 12", "pp. 12–13, OCR", "slide 3", "sheet FAQ, rows 4–7", "image, OCR"]
    assert [reasons.location_label(p) for p in places[:4]] == [p.label + ", OCR" * p.ocr for p in places[:4]]
    lang("zh")
    assert [reasons.location_label(p) for p in places] == [
        "第 12 页", "第 12–13 页，OCR", "第 3 张幻灯片", "工作表 FAQ，第 4–7 行", "图片，OCR"]


def test_a_stored_location_label_in_chinese(lang) -> None:
    """The store keeps a chunk's `Location.label` (English); the debugger, the chat's sources and the hits table
    show it in the user's language, and a label of another form as it is."""
    from rag_core.records import PAGE, ROW, SLIDE, Location

    labels = [Location(PAGE, 12, 12).label, Location(PAGE, 3, 4).label, Location(SLIDE, 2, 2).label,
              Location(ROW, 4, 7, sheet="FAQ, 2024").label, "image", "chapter 2"]
    assert [reasons.location_text(x) for x in labels] == labels
    lang("zh")
    assert [reasons.location_text(x) for x in labels] == [
        "第 12 页", "第 3–4 页", "第 2 张幻灯片", "工作表 FAQ, 2024，第 4–7 行", "图片", "chapter 2"]


def test_a_replay_link_carries_the_context_options() -> None:
    from rag_core.retrieval import LookupParams
    from rag_core.retrieval.expand import ExpandParams
    from rag_core.retrieval.projection import Budgets

    params = LookupParams(expand=ExpandParams("neighbours", 2, 3000, False),
                          budgets=Budgets(max_tokens_per_item=400, max_total_tokens=1500))
    out = debugger_query_params("q", params, replay=True)
    assert {k: out[k] for k in ("expand", "expand_neighbours", "parent_max_size", "merge", "block_tokens",
                                "context_tokens")} == {"expand": "neighbours", "expand_neighbours": "2",
                                                       "parent_max_size": "3000", "merge": "false",
                                                       "block_tokens": "400", "context_tokens": "1500"}
    assert debugger_query_params("q", params.to_dict())["merge"] == "false"  # a recorded lookup's params too
    from ui import reasons as words

    assert words.describe_drop({"kind": "merged", "by": ["a#chunk-1..2"]}) == "merged into a#chunk-1..2"
