"""Chunk preview page (AppTest): live re-chunking from the sliders, overlap highlighting, escaping,
indexed documents, uploads and the JSON download."""

import json
import re

from rag_core.chunking import chunk_text
from rag_core.loaders import load_bytes
from rag_core.store.milvus.rows import stored_chunk
from tests.ui.apptest_helpers import app_at, texts
from ui.documents import text_from_chunks
from ui.tables import chunks_download

PAGE = "pages/chunk_preview.py"
TEXT = ("# Guide\n\n" + "This sentence explains one thing. Another sentence adds detail. " * 12
        + "\n\n## Next\n\n" + "More words follow in the second section. " * 6)


def document(at) -> str:
    (doc,) = [h.value for h in at.html if 'class="chunked-doc"' in h.value]
    return doc


def metric(at, label):
    return {m.label: m.value for m in at.metric}[label]


def paste(at, text):
    at.segmented_control(key="cp.source").set_value("Paste text").run()
    at.text_area(key="cp.text").set_value(text).run()
    assert not at.exception


def test_sliders_rechunk_live_and_overlap_is_highlighted(kb):
    at = app_at(PAGE)
    paste(at, TEXT)
    at.slider(key="cp.max_size").set_value(200).run()
    at.slider(key="cp.overlap").set_value(0).run()
    assert not at.exception
    expected = chunk_text(TEXT, 200, 0)
    assert metric(at, "Chunks") == str(len(expected))
    assert 'class="overlap"' not in document(at)
    assert metric(at, "Boundaries with overlap") == f"0 / {len(expected) - 1}"

    at.slider(key="cp.overlap").set_value(60).run()
    assert not at.exception
    expected = chunk_text(TEXT, 200, 60)
    overlapped = [c for c in expected if c.overlap_chars]
    assert overlapped
    assert document(at).count('class="overlap"') == len(overlapped)
    assert metric(at, "Boundaries with overlap") == f"{len(overlapped)} / {len(expected) - 1}"
    summary = texts(at)
    assert "Effective overlap" in summary and "new heading section" in summary
    cards = [h.value for h in at.html if 'class="chunk-card"' in h.value]
    assert len(cards) == len(expected)
    assert "[0:" in cards[0] and "Guide" in cards[0]


def test_json_download_is_offered(kb):
    at = app_at(PAGE)
    paste(at, TEXT)
    (button,) = at.get("download_button")
    assert button.proto.label == "Chunks as JSON"


def test_download_payload_holds_every_chunk():
    chunks = chunk_text(TEXT, 300, 50)
    name, payload = chunks_download("runbooks/guide.md", TEXT, 300, 50, chunks)
    data = json.loads(payload)
    assert name == "guide.chunks.json"
    assert (data["max_size"], data["overlap"], data["characters"]) == (300, 50, len(TEXT))
    assert [c["text"] for c in data["chunks"]] == [c.text for c in chunks]
    assert data["summary"]["chunks"] == len(chunks)


def test_html_in_documents_is_escaped(kb):
    at = app_at(PAGE)
    paste(at, "# Title <b>bold</b>\n\n<script>window.pwned = 1</script> <img src=x onerror=alert(1)> text. " * 5)
    doc = document(at)
    assert "<script" not in doc and "<img" not in doc
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in doc
    assert all("<script" not in h.value for h in at.html)


def test_overlap_not_smaller_than_size_is_a_clear_error(kb):
    at = app_at(PAGE)
    paste(at, TEXT)
    at.slider(key="cp.max_size").set_value(100).run()
    at.slider(key="cp.overlap").set_value(100).run()
    assert not at.exception
    assert "must be smaller than the chunk size" in texts(at, "error")


def test_indexed_document_is_previewed_from_its_original(kb):
    at = app_at(PAGE)
    assert at.segmented_control(key="cp.source").value == "Indexed document"
    at.selectbox(key="cp.doc").set_value("cpu_high.md").run()
    assert not at.exception
    original = (kb.ingestor.original("cpu_high.md") or b"").decode()
    assert metric(at, "Characters") == f"{len(original):,}"
    assert "Indexed as" in texts(at, "caption")
    assert re.search(r'class="chunk-start"', document(at))


def test_uploaded_file_and_bad_upload(kb):
    at = app_at(PAGE)
    at.segmented_control(key="cp.source").set_value("Upload a file").run()
    at.file_uploader(key="cp.upload").set_value(("g.md", TEXT.encode("gb18030"), "text/markdown")).run()
    assert not at.exception
    assert metric(at, "Characters") == f"{len(TEXT):,}"
    at.file_uploader(key="cp.upload").set_value(("bad.docx", b"not a zip", "application/octet-stream")).run()
    assert not at.exception
    assert "not a valid .docx" in texts(at, "error")


def test_text_from_chunks_rebuilds_the_document():
    text = "# A\n\nFirst paragraph here. It goes on.\n\n## B\n\n   Second section text.\n"
    chunks = chunk_text(text, 30, 10)
    doc = load_bytes(text.encode(), "a.md")
    rebuilt = text_from_chunks([stored_chunk(doc, c, "v1", len(chunks), "2024-01-01T00:00:00Z") for c in chunks])
    assert [rebuilt[c.start:c.end] for c in chunks] == [c.text for c in chunks]
    assert chunk_text(rebuilt, 30, 10) == chunks  # the same chunks: headings stay at line starts
    assert text_from_chunks([]) == ""


def test_a_document_without_its_original_is_rebuilt_from_its_chunks(fresh_kb):
    fresh_kb.ingestor.ingest_documents([load_bytes(TEXT.encode(), "kept/none.md")])  # keeps no original
    at = app_at(PAGE)
    assert not at.exception
    assert "rebuilt from the stored chunks" in texts(at, "caption")
    assert metric(at, "Chunks") == str(len(chunk_text(TEXT.rstrip(), 800, 100)))


def test_compare_two_configurations_aligned_by_offset(kb):
    from rag_core.chunk_compare import compare_chunkings

    at = app_at(PAGE)
    paste(at, TEXT)
    at.slider(key="cp.max_size").set_value(300).run()
    at.slider(key="cp.overlap").set_value(30).run()
    at.toggle(key="cp.compare").set_value(True).run()
    assert not at.exception, at.exception
    base = at.selectbox(key="cp.b_from").value  # the only knowledge base here: B starts at its 800/100
    at.slider(key=f"cp.{base}.max_size_b").set_value(200).run()
    assert not at.exception, at.exception
    expected = compare_chunkings(TEXT, chunk_text(TEXT, 300, 30), chunk_text(TEXT, 200, 100))
    shown = {m.label: m.value for m in at.metric}
    assert shown["A chunks (300/30)"] == str(len(expected.a)) and shown["B chunks (200/100)"] == str(len(expected.b))
    assert (shown["Cuts in both"], shown["Cuts only in A"], shown["Cuts only in B"]) == tuple(
        str(v) for v in expected.counts().values())
    (table,) = [h.value for h in at.html if 'class="aligned-chunkings"' in h.value]
    assert table.count('class="aligned-row"') == len(expected.rows)
    assert 'data-mark="only B"' in table and 'data-mark="both"' in table  # the section start: both cut there
    assert not [h for h in at.html if 'class="chunked-doc"' in h.value]  # the single view is not drawn
    at.slider(key=f"cp.{base}.overlap_b").set_value(200).run()  # overlap >= max size: B's error, one line
    assert not at.exception and "B: " in texts(at, "error")


def test_an_uploaded_workbook_shows_its_sheets_rows_and_notes(kb, monkeypatch):
    from rag_core import loaders
    from tests.loaders.samples import workbook

    reads = []
    load = loaders.load_bytes
    monkeypatch.setattr(loaders, "load_bytes", lambda *a, **k: reads.append(a[1]) or load(*a, **k))
    at = app_at(PAGE)
    at.segmented_control(key="cp.source").set_value("Upload a file").run()
    at.file_uploader(key="cp.upload").set_value(("faq.xlsx", workbook(), "application/octet-stream")).run()
    assert not at.exception
    structure = "Structure: sheet Alerts (rows 1–5), sheet FAQ (rows 1–3) · Q&A sheet: FAQ (问题 / 答案)"
    assert structure in texts(at, "caption")
    cards = [h.value for h in at.html if 'class="chunk-card"' in h.value]
    assert "faq.xlsx" not in cards[0] and "#0 sheet Alerts, rows 1–5" in cards[0]
    assert any("sheet FAQ, row 3" in c and "Q: How do I rotate the API keys?" in c for c in cards)
    at.slider(key="cp.max_size").set_value(200).run()  # re-chunked from the cached document, not read again
    assert not at.exception and reads == ["faq.xlsx"]
