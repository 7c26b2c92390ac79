"""Knowledge base: the knowledge bases (create, copy, delete), then the selected one's embedder (its upgrade) and BM25
words, and its documents: upload (with progress and what changed in re-uploaded documents), the document list, delete
and re-index."""

from collections.abc import Callable

import streamlit as st

from rag_core.access.records import ALL, Role
from rag_core.errors import RagError
from rag_core.ingest import IngestProgress
from rag_core.kb.manage import CopyResult
from rag_core.kb.settings import defaults_for_new, describe_fields
from rag_core.loaders import OCR_EXTRA, SUPPORTED_EXTENSIONS, SUPPORTED_TEXT, ocr_available
from rag_core.records import IngestReport
from ui.access import admin_anywhere, allowed, current_principal, gate, record, refusal
from ui.bm25_words import bm25_section
from ui.components import headers, ingest_summary, run_ingest
from ui.documents import document_chunk_editor, edit_conflicts, tags_editor
from ui.errors import show_error
from ui.i18n import t, tn
from ui.kbs import access_folders_editor, given, settings_widgets
from ui.lookup import access_of
from ui.sources import sources_section
from ui.state import clear_workbench, get_settings, knowledge_bases, readable_kbs, switch_kb, workbench_or_stop
from ui.tables import documents_frame, knowledge_bases_frame
from ui.upgrade import embedder_section

current_principal()  # signed in first (ui/access.py): nothing below runs for an unknown person

st.title(t("📚 Knowledge base"))
wb = workbench_or_stop()
kbs = knowledge_bases()
name = wb.settings.kb_name
may_edit = allowed(name, Role.EDITOR)  # upload, delete and re-index documents, tags, chunk edits
ss = st.session_state
ss.setdefault("kb.uploader_round", 0)
summary = t("chunks {size}/{overlap} · {embedder} · {mode}, retrieve-k {k}, return-n {n}, cap {cap}",
            **describe_fields(wb.kb)) if wb.kb else ""  # rag_core.kb.settings.describe, in the session's language
default = t(" (default)") if name == kbs.default else ""
st.markdown(f"**{name}**{default} — {summary}")

# ------------------------------------------------------------------------------------------ knowledge bases
with st.expander(t("Knowledge bases: create, copy, delete"), expanded=bool(ss.get("kb.manage_open"))):
    try:
        infos = [kbs.info(n) for n in readable_kbs()]
    except RagError as exc:
        show_error(exc, icon=None)
        infos = []
    frame = knowledge_bases_frame(infos)
    st.dataframe(frame, hide_index=True, width="stretch", key="kb.list", column_config=headers(frame.columns))
    if not admin_anywhere():  # create, copy and delete need the admin role (on the knowledge bases concerned)
        st.caption(f"🔒 {refusal(ALL, Role.ADMIN)}")
    else:
        create_tab, copy_tab, delete_tab = st.tabs([t("Create"), t("Copy {name}", name=name),
                                                    t("Delete {name}", name=name)])
        with create_tab:
            new_name = st.text_input(t("Name"), key="kb.new_name", placeholder=t("e.g. runbooks_small"),
                                     help=t("Letters, digits and underscores; it names Milvus collections."))
            shown = defaults_for_new(get_settings())
            values = given(settings_widgets("kb.new", shown), shown)
            creatable = allowed(new_name.strip(), Role.ADMIN) if new_name.strip() else False
            if new_name.strip() and not creatable:
                st.caption(f"🔒 {refusal(new_name.strip(), Role.ADMIN)}")
            if st.button(t("Create knowledge base"), type="primary", key="kb.create", disabled=not creatable):
                try:
                    with st.spinner(t("Creating {name}…", name=new_name.strip())):
                        made = kbs.create(new_name.strip(), values)
                except RagError as exc:
                    show_error(exc)
                else:
                    record("kbs.create", made.name, made.name)
                    ss["kb.notice"] = t("Created knowledge base {name}; it is selected now.", name=made.name)
                    switch_kb(made.name)
                    st.rerun()
        with copy_tab:
            st.caption(t("Re-chunks and re-embeds every document of **{name}** from its kept originals into a new "
                         "knowledge base with the settings below; {name} is left as it is.", name=name))
            copy_name = st.text_input(t("Name of the copy"), key="kb.copy_name",
                                      placeholder=f"{name}_small")  # i18n: ok
            copy_shown = dict(wb.kb.settings) if wb.kb else defaults_for_new(wb.settings)
            copy_values = given(settings_widgets("kb.copy", copy_shown), copy_shown)
            lacking = [kb for kb in (name, copy_name.strip()) if kb and not allowed(kb, Role.ADMIN)]  # both sides'
            if lacking:
                st.caption(f"🔒 {refusal(lacking[0], Role.ADMIN)}")
            if st.button(t("Copy {name}", name=name), type="primary", key="kb.copy",
                         disabled=not copy_name.strip() or bool(lacking)):
                done: list[CopyResult] = []  # the CopyResult, from inside the progress job

                def copy_job(progress: Callable[[IngestProgress], None]) -> list[IngestReport]:
                    done.append(kbs.copy(name, copy_name.strip(), copy_values, progress=progress))
                    return done[0].reports

                try:
                    reports = run_ingest(copy_job)
                except RagError as exc:
                    show_error(exc)
                else:
                    result = done[0]
                    record("kbs.copy", result.kb.name, name, source=name, failed=len(result.failed))
                    ss["kb.reports"] = reports
                    ss["kb.notice"] = t("Copied {copied} of {n} documents into {name}; it is selected now.",
                                        copied=len(reports) - len(result.failed), n=len(reports), name=result.kb.name)
                    switch_kb(result.kb.name)
                    st.rerun()
        with delete_tab:
            if not allowed(name, Role.ADMIN):
                st.caption(f"🔒 {refusal(name, Role.ADMIN)}")
            elif name == kbs.default:
                st.info(t("{name} is the default knowledge base (milvus.collection) and cannot be deleted.", name=name))
            else:
                confirm = st.text_input(t("Type {name} to delete it with its documents and kept originals", name=name),
                                        key="kb.delete_name")
                if st.button(t("Delete {name}", name=name), type="primary", key="kb.delete_kb",
                             disabled=confirm.strip() != name):
                    try:
                        note = kbs.delete(name)
                    except RagError as exc:
                        show_error(exc)
                    else:
                        clear_workbench()  # its store was open in the shared cache
                        record("kbs.delete", name, name)
                        ss["kb.notice"] = t("Deleted knowledge base {name}.", name=name) + (f" {note}" if note else "")
                        ss.pop("kb.reports", None)
                        switch_kb(kbs.default)
                        st.rerun()
if notice := ss.pop("kb.notice", None):
    st.success(notice, icon="📚")

# ------------------------------------------------------------------------------------------ embedder
may_change = allowed(name, Role.ADMIN)  # changing a knowledge base's settings is its admins'
embedder_section(wb, name, may_change, None if may_change else refusal(name, Role.ADMIN))
bm25_section(wb, name, may_change, None if may_change else refusal(name, Role.ADMIN))  # words of its keyword channel

# ------------------------------------------------------------------------------------------ upload
st.subheader(t("Add documents to {name}", name=name))
if gate(name, Role.EDITOR):  # uploading is an editor's: a reader sees the documents only
    ocr = (t("Scanned PDFs and images are read by OCR.") if ocr_available() else
           t("Scanned PDFs and images are read by OCR once its optional extra is installed ({extra}).",
             extra=OCR_EXTRA))
    st.caption(t("{types}; up to {mb} MB per file. {ocr} A document with the same id is replaced; unchanged content is "
                 "skipped.", types=SUPPORTED_TEXT, mb=f"{wb.settings['loader.max-file-mb']:g}", ocr=ocr))
    left, right = st.columns([3, 2])
    with left:
        whole_folder = st.toggle(t("A whole folder"), key="kb.folder_mode", help=t("Pick a folder: its files of the "
                                 "types above are ingested with their paths inside it, as `ingest FOLDER` does."))
        files = st.file_uploader(t("Folder") if whole_folder else t("Files"), type=list(SUPPORTED_EXTENSIONS),
                                 accept_multiple_files="directory" if whole_folder else True,
                                 key=f"kb.files.{ss['kb.uploader_round']}")
    with right:
        prefix = st.text_input(t("Folder inside the knowledge base (optional)"), key="kb.prefix",
                               placeholder="runbooks",  # i18n: ok (an example folder name)
                               help=t("Put in front of each file name to form its doc_id: cpu_high.md with folder "
                                      "runbooks becomes runbooks/cpu_high.md — the same document as when the "
                                      "folder is ingested from the command line."))
        if files:
            folder = prefix.strip().strip("/\\")
            st.caption(t("Will be indexed as: {names}",
                         names=", ".join(f"`{folder + '/' if folder else ''}{f.name}`" for f in files[:5]))
                       + (t(" and {n} more", n=len(files) - 5) if len(files) > 5 else ""))
        ingest = st.button(tn("Ingest {n} file", "Ingest {n} files", len(files)) if files else t("Ingest"),
                           type="primary", disabled=not files, key="kb.ingest")

    if ingest and files:
        uploads = [(f.name, f.getvalue()) for f in files]
        reports = run_ingest(lambda progress: wb.ingestor.ingest_uploads(uploads, prefix=prefix, progress=progress),
                             names=[name for name, _ in uploads])
        for report in reports:
            if report.status in ("added", "replaced"):
                record("documents.upload", name, report.doc_id, status=report.status, chunks=report.chunks)
        ss["kb.reports"] = reports
        ss["kb.uploader_round"] += 1  # a fresh, empty uploader
        st.rerun()

if last_reports := ss.get("kb.reports"):
    ingest_summary(last_reports)
    edit_conflicts(wb, [r.doc_id for r in last_reports if r.diff is not None and r.diff.conflicts],
                   key="kb.conflicts")

sources_section(wb, name)

# ------------------------------------------------------------------------------------------ documents
st.subheader(t("Documents"))
if allowed(name, Role.ADMIN):  # who may retrieve what: the knowledge base's admins set it
    access_folders_editor(name, wb.settings["access.folders"])
try:  # only those this person may retrieve (access groups), with their groups for an admin
    listed = wb.listed_documents(access_of(name))
except RagError as exc:
    show_error(exc, icon=None)
    st.stop()
docs = [d for d, _ in listed]
if not docs:
    st.info(t("No documents yet: upload some above, or load the sample on the Home page."), icon="📭")
    st.stop()

st.caption(tn("{n} document, {chunks} chunks. Re-indexing re-chunks and re-embeds from the kept originals with the "
              "current settings (max {size}, overlap {overlap}).",
              "{n} documents, {chunks} chunks. Re-indexing re-chunks and re-embeds from the kept originals with the "
              "current settings (max {size}, overlap {overlap}).", len(docs), chunks=sum(d.chunks for d in docs),
              size=wb.settings["chunk.max-size"], overlap=wb.settings["chunk.overlap"]))
docs_frame = documents_frame(docs, [groups for _, groups in listed])
st.dataframe(docs_frame, hide_index=True, width="stretch", key="kb.docs", column_config=headers(docs_frame.columns, {
    "doc_id": st.column_config.TextColumn("doc_id", width="large"),  # i18n: ok (the field's name)
    "size (KB)": st.column_config.NumberColumn(t("size (KB)"), format="%.1f"),  # keyed by the frame's column
}))

ids = [d.doc_id for d in docs]
ss["kb.selected"] = [i for i in ss.get("kb.selected", []) if i in ids]  # forget deleted documents
selected = st.multiselect(t("Select documents"), ids, key="kb.selected",
                          placeholder=t("Choose documents to delete or re-index"))
c1, c2, c3, _ = st.columns([1.2, 1.2, 1.2, 3])
locked = None if may_edit else refusal(name, Role.EDITOR)  # a reader sees the buttons, disabled, and why
reindex_selected = c1.button(t("Re-index selected"), disabled=not (selected and may_edit), key="kb.reindex_selected",
                             icon="🔄", help=locked)
reindex_all = c2.button(t("Re-index all"), key="kb.reindex_all", icon="🔁", disabled=not may_edit, help=locked)
with c3.popover(t("Delete selected"), disabled=not (selected and may_edit), icon="🗑️", help=locked):
    st.write(tn("Delete {n} document and its chunks? This cannot be undone.",
                "Delete {n} documents and their chunks? This cannot be undone.", len(selected)))
    delete = st.button(t("Delete"), type="primary", key="kb.delete_confirm", disabled=not may_edit)

tags_editor(wb, ids)
document_chunk_editor(wb, ids)

if (reindex_selected or reindex_all) and may_edit:
    targets = list(selected) if reindex_selected else None
    try:
        reports = run_ingest(lambda progress: wb.ingestor.reindex(targets, progress=progress),
                             names=targets or ())
    except RagError as exc:
        show_error(exc, icon=None)
    else:
        missing = sorted(set(targets or ()) - {r.doc_id for r in reports})
        record("documents.reindex", name, ", ".join(targets or ["*"]), documents=len(reports))
        ss["kb.reports"] = reports
        ss["kb.missing"] = missing
        st.rerun()
if missing := ss.pop("kb.missing", None):
    st.warning(t("No kept original for {docs}: upload those files again to re-index them.",
                 docs=", ".join(f"`{m}`" for m in missing)))

if delete and selected and may_edit:
    removed = [doc_id for doc_id in selected if wb.ingestor.delete(doc_id)]
    for doc_id in removed:
        record("documents.delete", name, doc_id)
    ss["kb.deleted"] = removed
    ss.pop("kb.reports", None)
    st.rerun()
if removed := ss.pop("kb.deleted", None):
    st.toast(tn("Deleted {n} document.", "Deleted {n} documents.", len(removed)), icon="🗑️")
