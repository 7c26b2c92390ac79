"""Knowledge base: the knowledge bases (create, copy, delete), then the selected one's documents: upload (with
progress and what changed in re-uploaded documents), the document list, delete and re-index."""

import streamlit as st

from rag_core.errors import RagError
from rag_core.kb.settings import defaults_for_new, describe
from rag_core.loaders import OCR_EXTRA, SUPPORTED_EXTENSIONS, SUPPORTED_TEXT, ocr_available
from ui.components import ingest_summary, run_ingest
from ui.documents import document_chunk_editor, tags_editor
from ui.kbs import given, settings_widgets
from ui.state import clear_workbench, get_settings, knowledge_bases, switch_kb, workbench_or_stop
from ui.tables import documents_frame, knowledge_bases_frame

st.title("📚 Knowledge base")
wb = workbench_or_stop()
kbs = knowledge_bases()
name = wb.settings.kb_name
ss = st.session_state
ss.setdefault("kb.uploader_round", 0)
st.markdown(f"**{name}**{' (default)' if name == kbs.default else ''} — {describe(wb.kb) if wb.kb else ''}")

# ------------------------------------------------------------------------------------------ knowledge bases
with st.expander("Knowledge bases: create, copy, delete", expanded=bool(ss.get("kb.manage_open"))):
    try:
        infos = [kbs.info(n) for n in kbs.names()]
    except RagError as exc:
        st.error(str(exc))
        infos = []
    st.dataframe(knowledge_bases_frame(infos), hide_index=True, width="stretch", key="kb.list")
    create_tab, copy_tab, delete_tab = st.tabs(["Create", f"Copy {name}", f"Delete {name}"])
    with create_tab:
        new_name = st.text_input("Name", key="kb.new_name", placeholder="e.g. runbooks_small",
                                 help="Letters, digits and underscores; it names Milvus collections.")
        shown = defaults_for_new(get_settings())
        values = given(settings_widgets("kb.new", shown), shown)
        if st.button("Create knowledge base", type="primary", key="kb.create", disabled=not new_name.strip()):
            try:
                with st.spinner(f"Creating {new_name.strip()}…"):
                    made = kbs.create(new_name.strip(), values)
            except RagError as exc:
                st.error(str(exc), icon="🛑")
            else:
                ss["kb.notice"] = f"Created knowledge base {made.name}; it is selected now."
                switch_kb(made.name)
                st.rerun()
    with copy_tab:
        st.caption(f"Re-chunks and re-embeds every document of **{name}** from its kept originals into a new "
                   f"knowledge base with the settings below; {name} is left as it is.")
        copy_name = st.text_input("Name of the copy", key="kb.copy_name", placeholder=f"{name}_small")
        copy_shown = dict(wb.kb.settings) if wb.kb else defaults_for_new(wb.settings)
        copy_values = given(settings_widgets("kb.copy", copy_shown), copy_shown)
        if st.button(f"Copy {name}", type="primary", key="kb.copy", disabled=not copy_name.strip()):
            done = []  # the CopyResult, from inside the progress job
            try:
                reports = run_ingest(lambda progress: done.append(
                    kbs.copy(name, copy_name.strip(), copy_values, progress=progress)) or done[0].reports)
            except RagError as exc:
                st.error(str(exc), icon="🛑")
            else:
                result = done[0]
                ss["kb.reports"] = reports
                ss["kb.notice"] = (f"Copied {len(reports) - len(result.failed)} of {len(reports)} documents into "
                                   f"{result.kb.name}; it is selected now.")
                switch_kb(result.kb.name)
                st.rerun()
    with delete_tab:
        if name == kbs.default:
            st.info(f"{name} is the default knowledge base (milvus.collection) and cannot be deleted.")
        else:
            confirm = st.text_input(f"Type {name} to delete it with its documents and kept originals",
                                    key="kb.delete_name")
            if st.button(f"Delete {name}", type="primary", key="kb.delete_kb", disabled=confirm.strip() != name):
                try:
                    note = kbs.delete(name)
                except RagError as exc:
                    st.error(str(exc), icon="🛑")
                else:
                    clear_workbench()  # its store was open in the shared cache
                    ss["kb.notice"] = f"Deleted knowledge base {name}." + (f" {note}" if note else "")
                    ss.pop("kb.reports", None)
                    switch_kb(kbs.default)
                    st.rerun()
if notice := ss.pop("kb.notice", None):
    st.success(notice, icon="📚")

# ------------------------------------------------------------------------------------------ upload
st.subheader(f"Add documents to {name}")
st.caption(f"{SUPPORTED_TEXT}; up to {wb.settings['loader.max-file-mb']:g} MB per file. Scanned PDFs and images "
           f"are read by OCR{'' if ocr_available() else f' once its optional extra is installed ({OCR_EXTRA})'}. "
           "A document with the same id is replaced; unchanged content is skipped.")
left, right = st.columns([3, 2])
with left:
    whole_folder = st.toggle("A whole folder", key="kb.folder_mode", help="Pick a folder: its files of the types "
                             "above are ingested with their paths inside it, as `ingest FOLDER` does.")
    files = st.file_uploader("Folder" if whole_folder else "Files", type=list(SUPPORTED_EXTENSIONS),
                             accept_multiple_files="directory" if whole_folder else True,
                             key=f"kb.files.{ss['kb.uploader_round']}")
with right:
    prefix = st.text_input("Folder inside the knowledge base (optional)", key="kb.prefix", placeholder="runbooks",
                           help="Put in front of each file name to form its doc_id: cpu_high.md with folder "
                                "runbooks becomes runbooks/cpu_high.md — the same document as when the "
                                "folder is ingested from the command line.")
    if files:
        folder = prefix.strip().strip("/\\")
        st.caption("Will be indexed as: " + ", ".join(f"`{folder + '/' if folder else ''}{f.name}`" for f in files[:5])
                   + (f" and {len(files) - 5} more" if len(files) > 5 else ""))
    ingest = st.button(f"Ingest {len(files)} file{'s' if len(files) != 1 else ''}" if files else "Ingest",
                       type="primary", disabled=not files, key="kb.ingest")

if ingest and files:
    uploads = [(f.name, f.getvalue()) for f in files]
    reports = run_ingest(lambda progress: wb.ingestor.ingest_uploads(uploads, prefix=prefix, progress=progress),
                         names=[name for name, _ in uploads])
    ss["kb.reports"] = reports
    ss["kb.uploader_round"] += 1  # a fresh, empty uploader
    st.rerun()

if reports := ss.get("kb.reports"):
    ingest_summary(reports)

# ------------------------------------------------------------------------------------------ documents
st.subheader("Documents")
try:
    docs = wb.store.list_documents()
except RagError as exc:
    st.error(str(exc))
    st.stop()
if not docs:
    st.info("No documents yet: upload some above, or load the sample on the Home page.", icon="📭")
    st.stop()

st.caption(f"{len(docs)} documents, {sum(d.chunks for d in docs)} chunks. Re-indexing re-chunks and re-embeds "
           f"from the kept originals with the current settings (max {wb.settings['chunk.max-size']}, "
           f"overlap {wb.settings['chunk.overlap']}).")
st.dataframe(documents_frame(docs), hide_index=True, width="stretch", key="kb.docs", column_config={
    "doc_id": st.column_config.TextColumn("doc_id", width="large"),
    "size (KB)": st.column_config.NumberColumn("size (KB)", format="%.1f"),
})

ids = [d.doc_id for d in docs]
ss["kb.selected"] = [i for i in ss.get("kb.selected", []) if i in ids]  # forget deleted documents
selected = st.multiselect("Select documents", ids, key="kb.selected", placeholder="Choose documents to delete "
                          "or re-index")
c1, c2, c3, _ = st.columns([1.2, 1.2, 1.2, 3])
reindex_selected = c1.button("Re-index selected", disabled=not selected, key="kb.reindex_selected", icon="🔄")
reindex_all = c2.button("Re-index all", key="kb.reindex_all", icon="🔁")
with c3.popover("Delete selected", disabled=not selected, icon="🗑️"):
    st.write(f"Delete {len(selected)} document{'s' if len(selected) != 1 else ''} and their chunks? "
             "This cannot be undone.")
    delete = st.button("Delete", type="primary", key="kb.delete_confirm")

tags_editor(wb, ids)
document_chunk_editor(wb, ids)

if reindex_selected or reindex_all:
    targets = list(selected) if reindex_selected else None
    try:
        reports = run_ingest(lambda progress: wb.ingestor.reindex(targets, progress=progress),
                             names=targets or ())
    except RagError as exc:
        st.error(str(exc))
    else:
        missing = sorted(set(targets or ()) - {r.doc_id for r in reports})
        ss["kb.reports"] = reports
        ss["kb.missing"] = missing
        st.rerun()
if missing := ss.pop("kb.missing", None):
    st.warning("No kept original for " + ", ".join(f"`{m}`" for m in missing)
               + ": upload those files again to re-index them.")

if delete and selected:
    removed = [doc_id for doc_id in selected if wb.ingestor.delete(doc_id)]
    ss["kb.deleted"] = removed
    ss.pop("kb.reports", None)
    st.rerun()
if removed := ss.pop("kb.deleted", None):
    st.toast(f"Deleted {len(removed)} document{'s' if len(removed) != 1 else ''}.", icon="🗑️")
