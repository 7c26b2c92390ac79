"""Knowledge base page (AppTest): upload with a folder prefix, bad files reported with nothing lost,
the document list, delete and re-index."""

from rag_core.kb.tags import tag
from tests.ui.apptest_helpers import app_at, texts

PAGE = "pages/knowledge_base.py"
GOOD_A = ("cpu.md", b"# CPU\n\nWhen CPU is high, check the top pods first. Then look at throttling.\n", "text/markdown")
GOOD_B = ("notes.txt", b"Disk full: clean the journal, never /var/lib/mysql.\n", "text/plain")


def uploader(at):
    (widget,) = [w for w in at.file_uploader if w.key.startswith("kb.files.")]
    return widget


def report_table(at):
    (frame,) = [d.value for d in at.dataframe if "reason" in d.value.columns]
    return frame


def docs_table(at):
    (frame,) = [d.value for d in at.dataframe if "ingested at" in d.value.columns]
    return frame


def test_upload_two_files_into_a_folder(fresh_kb):
    at = app_at(PAGE)
    assert "No documents yet" in texts(at, "info")
    uploader(at).set_value([GOOD_A, GOOD_B])
    at.text_input(key="kb.prefix").set_value("runbooks")
    at.run()
    assert "`runbooks/cpu.md`" in texts(at, "caption")
    at.button(key="kb.ingest").click().run()
    assert not at.exception
    assert "2 added" in texts(at, "success")
    report = report_table(at)
    assert list(report["doc_id"]) == ["runbooks/cpu.md", "runbooks/notes.txt"]
    assert list(report["status"]) == ["added", "added"]
    table = docs_table(at)
    assert list(table["doc_id"]) == ["runbooks/cpu.md", "runbooks/notes.txt"]
    assert list(table["type"]) == ["md", "txt"] and all(table["chunks"] >= 1)
    assert not uploader(at).value  # a fresh, empty uploader after ingesting

    # the same upload again is unchanged; changed content replaces
    uploader(at).set_value([GOOD_A, ("notes.txt", b"Disk full: new advice.\n", "text/plain")])
    at.text_input(key="kb.prefix").set_value("runbooks")
    at.run()
    at.button(key="kb.ingest").click().run()
    assert list(report_table(at)["status"]) == ["unchanged", "replaced"]


def test_bad_files_are_reported_and_nothing_is_lost(fresh_kb):
    at = app_at(PAGE)
    uploader(at).set_value([GOOD_A, ("empty.md", b"", "text/markdown"),
                            ("fake.pdf", b"this is not a pdf", "application/pdf")])
    at.run()
    at.button(key="kb.ingest").click().run()
    assert not at.exception
    assert "1 added, 2 failed" in texts(at, "warning")
    errors = texts(at, "error")
    assert "empty.md" in errors and "the file is empty" in errors
    assert "fake.pdf" in errors and "not a PDF" in errors
    report = report_table(at)
    assert list(report["status"]) == ["added", "failed", "failed"]
    assert [d.doc_id for d in fresh_kb.store.list_documents()] == ["cpu.md"]


def test_delete_and_reindex_selected_documents(fresh_kb):
    fresh_kb.ingestor.ingest_uploads([GOOD_A[:2], GOOD_B[:2]])
    at = app_at(PAGE)
    assert list(docs_table(at)["doc_id"]) == ["cpu.md", "notes.txt"]
    at.multiselect(key="kb.selected").set_value(["notes.txt"]).run()
    at.button(key="kb.reindex_selected").click().run()
    assert not at.exception
    assert list(report_table(at)["status"]) == ["replaced"]

    at.multiselect(key="kb.selected").set_value(["cpu.md"]).run()
    at.button(key="kb.delete_confirm").click().run()
    assert not at.exception
    assert list(docs_table(at)["doc_id"]) == ["notes.txt"]
    assert at.multiselect(key="kb.selected").value == []
    assert fresh_kb.ingestor.original("cpu.md") is None

    at.button(key="kb.reindex_all").click().run()
    assert not at.exception
    assert list(report_table(at)["doc_id"]) == ["notes.txt"]


def test_the_caption_lists_every_type_the_loader_reads(kb):
    from rag_core.loaders import SUPPORTED_EXTENSIONS, SUPPORTED_TEXT

    at = app_at(PAGE)
    assert SUPPORTED_TEXT in texts(at, "caption") and "read by OCR" in texts(at, "caption")
    assert set(uploader(at).proto.type) == {"." + e for e in SUPPORTED_EXTENSIONS}
    at.toggle(key="kb.folder_mode").set_value(True).run()
    assert not at.exception and uploader(at).proto.multiple_files


def test_an_uploaded_workbook_reports_how_it_was_read(fresh_kb):
    from tests.loaders.samples import workbook

    at = app_at(PAGE)
    uploader(at).set_value([("alerts.xlsx", workbook(), "application/octet-stream")])
    at.run()
    at.button(key="kb.ingest").click().run()
    assert not at.exception and "1 added" in texts(at, "success")
    assert list(report_table(at)["notes"]) == ["Q&A sheet: FAQ (问题 / 答案)"]


def test_tags_are_set_on_the_page_and_shown_with_the_metadata(kb):
    at = app_at(PAGE)
    at.selectbox(key="kb.tag_doc").set_value("disk_full.md").run()
    assert "`folder=`" in texts(at) and "`type=md`" in texts(at)
    at.text_input(key="kb.tag_text").set_value("team=sre bad").run()
    at.button(key="kb.tag_set").click().run()
    assert "is not key=value" in texts(at, "error")
    at.text_input(key="kb.tag_text").set_value("team=sre").run()
    at.button(key="kb.tag_set").click().run()
    assert not at.exception and "disk_full.md: tags team=sre" in texts(at, "success")
    assert kb.store.labels.tags("disk_full.md") == {"team": ["sre"]}
    assert all("team=sre" in c.labels for c in kb.store.get_chunks("disk_full.md"))  # the rows Milvus filters
    tag(kb.store, "disk_full.md", [], replace=True)


def test_a_document_s_chunks_are_disabled_enabled_and_edited_on_the_page(kb):
    from rag_core.kb.chunk_edits import history, revert

    at = app_at(PAGE)
    at.selectbox(key="kb.chunks_doc").set_value("disk_full.md").run()
    key = at.selectbox(key="kb.edit_key").value
    assert key == "disk_full.md#chunk-0" and at.button(key="kb.edit_toggle").label == "Disable"
    at.button(key="kb.edit_toggle").click().run()
    assert not at.exception and kb.store.edits.disabled().keys() == {key}
    assert at.button(key="kb.edit_toggle").label == "Enable"  # the page reads the state back
    at.button(key="kb.edit_toggle").click().run()
    assert kb.store.edits.disabled() == {}
    at.text_input(key=f"kb.edit_keywords.{key}").set_value("磁盘满, disk full").run()
    at.button(key="kb.edit_save").click().run()
    assert not at.exception and [h["what"] for h in history(kb.store, key)["history"]][-1].startswith("keywords")
    revert(kb.store, kb.embedder, key)


STEPS = "".join(f"## Step {i}\n\n" + f"Step {i} of the runbook: check the disk and the volume {i}. " * 12 + "\n\n"
                for i in range(3))


def test_a_chunk_is_added_and_a_re_upload_s_conflicts_are_kept_or_dropped_on_the_page(fresh_kb):
    from rag_core.kb.chunk_edits import edit_chunk, set_disabled

    fresh_kb.ingestor.ingest_uploads([("steps.md", STEPS.encode())])
    n = len(fresh_kb.store.get_chunks("steps.md"))
    at = app_at(PAGE)
    at.selectbox(key="kb.chunks_doc").set_value("steps.md").run()
    at.button(key="kb.add").click().run()
    assert not at.exception and "The chunk text is empty" in texts(at, "error")
    at.text_area(key="kb.add_text").set_value("My own chunk about quokkas.").run()
    at.button(key="kb.add").click().run()
    assert not at.exception and f"Added steps.md#chunk-{n}." in texts(at, "success")
    assert at.text_area(key="kb.add_text").value == ""
    assert fresh_kb.store.get_chunks("steps.md")[-1].metadata["added"]
    edit_chunk(fresh_kb.store, fresh_kb.embedder, "steps.md#chunk-1", text="My own step one.")
    set_disabled(fresh_kb.store, "steps.md#chunk-2", True)
    changed = STEPS.replace("volume 1", "volume one").replace("volume 2", "volume two")
    uploader(at).set_value([("steps.md", changed.encode(), "text/markdown")])
    at.run()
    at.button(key="kb.ingest").click().run()
    assert not at.exception and "steps.md: 2 chunk edits no longer match" in texts(at, "warning")
    at.button(key="kb.conflicts.keep.steps.md#chunk-1").click().run()
    assert not at.exception and fresh_kb.store.get_chunks("steps.md")[1].content == "My own step one."
    at.button(key="kb.conflicts.drop.steps.md#chunk-2").click().run()
    assert not at.exception and "no longer match" not in texts(at, "warning")
    assert fresh_kb.store.edits.disabled() == {} and fresh_kb.store.get_chunks("steps.md")[-1].metadata["added"]
