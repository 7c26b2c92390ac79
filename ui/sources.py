"""The knowledge base page's Sources section (issue 38): the sources kept in sync with the selected knowledge base,
their last sync, a sync now (with progress, or a dry run), adding and removing one. Every action is
rag_core.sources.manage's, as `sources ...` on the command line and `/v1/kbs/{kb}/sources` do; who may do what
is the same: reader sees, editor syncs, admin adds and removes (a folder of this machine's files: an admin of
every knowledge base)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd
import streamlit as st

from rag_core.access.records import ALL, Role
from rag_core.bootstrap import build_source_book
from rag_core.errors import RagError
from rag_core.sources.manage import needs_operator, new_source, remove_source, sync_source
from rag_core.sources.schedule import next_run
from rag_core.sources.types import TYPES

from .access import allowed, record
from .components import IngestProgressView
from .errors import show_error
from .i18n import N_, t

ACTIONS = {"added": N_("added"), "replaced": N_("replaced"), "deleted": N_("deleted")}
GLOB_OPTIONS = ("include", "exclude")  # lists of globs (comma-separated here)


def _status(status: dict[str, Any]) -> str:
    if status.get("running_since"):
        return t("a sync started at {when} has not finished (it is running, or was stopped: the next sync finishes "
                 "its work)", when=status["running_since"])
    if not status:
        return t("never synced")
    if status.get("error"):
        return t("failed at {when}: {error}", when=status["started_at"], error=status["error"])
    return t("{when}: {added} added, {replaced} replaced, {unchanged} unchanged, {deleted} deleted, {failed} failed",
             when=status["started_at"], **{k: status[k] for k in ("added", "replaced", "unchanged", "deleted",
                                                                   "failed")})


def _next(source: Any) -> str:
    when = next_run(source)
    if when is None:
        return t("when asked")
    return t("now") if not source.status else when.strftime("%Y-%m-%d %H:%M")


def sources_section(wb: Any, kb: str) -> None:
    settings = wb.settings
    book = build_source_book(settings)
    sources = book.all(kb)
    with st.expander(t("Sources kept in sync ({n})", n=len(sources)), expanded=bool(sources)):
        if sources:
            st.dataframe(pd.DataFrame([{t("source"): s.name, t("type"): s.type, t("location"): s.location,
                                        t("folder"): s.folder + "/", t("documents"): len(s.indexed),
                                        t("last sync"): _status(s.status),
                                        t("next sync"): _next(s)} for s in sources]),
                         hide_index=True, width="stretch")
            chosen = st.selectbox(t("Source"), [s.name for s in sources], key="kb.source")
            source = next(s for s in sources if s.name == chosen)
            for doc_id, reason in (source.status.get("failures") or {}).items():
                st.caption(f"⚠️ {doc_id}: {reason}")
            c1, c2, c3 = st.columns(3)
            may_sync = allowed(kb, Role.EDITOR)
            dry = c1.button(t("Preview the sync"), key="kb.source_dry", disabled=not may_sync)
            run = c2.button(t("Sync now"), key="kb.source_sync", type="primary", disabled=not may_sync)
            deletes = c2.checkbox(t("Allow many deletions"), key="kb.source_deletes", disabled=not may_sync,
                                  help=t("A sync that would delete more than sources.max-delete-share of the "
                                         "source's documents stops unless this is ticked."))
            every = c3.number_input(t("Every (minutes)"), min_value=0, value=source.every, step=15,
                                    key=f"kb.source_every.{source.name}", disabled=not allowed(kb, Role.ADMIN),
                                    help=t("The API server (`serve`) syncs it this often; 0: only when asked."))
            if every != source.every:
                book.set_every(source, int(every))
                record("sources.set", kb, source.name, every=int(every))
                st.rerun()
            if c3.button(t("Remove the source"), key="kb.source_remove", disabled=not allowed(kb, Role.ADMIN),
                         help=t("Its documents stay in the knowledge base.")):
                remove_source(book, source)
                record("sources.remove", kb, source.name, documents_deleted=0)
                st.rerun()
            if dry or run:
                try:
                    view = IngestProgressView()
                    result = sync_source(settings, book, source, wb.ingestor, dry_run=dry, allow_deletes=deletes,
                                         progress=view)
                    view.finish()
                except RagError as exc:
                    show_error(exc, icon=None)
                else:
                    if run:
                        record("sources.sync", kb, source.name, added=len(result.added),
                               replaced=len(result.replaced), deleted=len(result.deleted),
                               failed=len(result.failures))
                    st.success(_status(result.to_dict()), icon="🔄")
                    for action, label in ACTIONS.items():
                        if dry and getattr(result, action):
                            st.caption(t("would be {action}: {docs}", action=t(label),
                                         docs=", ".join(getattr(result, action))))
        else:
            st.caption(t("No source yet: a folder, a Git repository or a website this knowledge base is kept in "
                         "sync with (`python -m rag_core sources add`)."))
        if allowed(kb, Role.ADMIN):
            _add_form(settings, book, kb)


def _add_form(settings: Any, book: Any, kb: str) -> None:
    with st.form("kb.source_add", clear_on_submit=False):
        st.markdown(t("**Add a source**"))
        c1, c2 = st.columns([1, 3])
        kind = c1.selectbox(t("Type"), list(TYPES), key="kb.source_type")
        location = c2.text_input(t("Location"), key="kb.source_location",
                                 help=t("A folder of this machine, a Git repository's URL or path, a start URL or "
                                        "a sitemap, a Confluence base URL (with the option space=KEY), an "
                                        "export's .zip."))
        c3, c4, c5 = st.columns([2, 3, 1])
        name = c3.text_input(t("Name (optional)"), key="kb.source_name")
        every = c5.number_input(t("Every (minutes)"), min_value=0, value=0, step=15, key="kb.source_every",
                                help=t("The API server (`serve`) syncs it this often; 0: only when asked."))
        options = c4.text_input(t("Options (optional)"), key="kb.source_options",
                                placeholder="branch=main; subfolder=docs",  # i18n: ok (the options' syntax)
                                help=t("KEY=VALUE separated by ;, as `sources add --option` (include and exclude: "
                                       "globs separated by commas)."))
        if not st.form_submit_button(t("Add the source")):
            return
    try:
        if needs_operator(kind, location) and not allowed(ALL, Role.ADMIN):
            raise RagError(t("A source of this machine's own files (a folder, an export, a local Git repository) "
                             "or of Confluence (it is sent the server's token) needs the admin role on every "
                             "knowledge base."))
        pairs = [p.strip().split("=", 1) for p in options.split(";") if "=" in p]
        given = {k.strip(): v.split(",") if k.strip() in GLOB_OPTIONS else v.strip() for k, v in pairs}
        made = new_source(settings, kb, kind, location.strip(), given, name=name.strip() or None)
        source = book.add(replace(made, every=int(every)))
    except RagError as exc:
        show_error(exc, icon=None)
        return
    record("sources.add", kb, source.name, type=source.type, location=source.location, folder=source.folder)
    st.session_state["kb.notice"] = t("Added the source {name}; sync it to index its documents.", name=source.name)
    st.rerun()
