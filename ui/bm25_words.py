"""The Knowledge base page's "BM25 words" section (issue 41): the knowledge base's own BM25 dictionary and stop words
(rag_core.dictionary) in two text areas, terms suggested from its headings and code (retrieval.dictionary), an
example query's terms with the current words and with the words being edited (retrieval.keywords.query_terms), and
Apply: a BM25 re-index with the new words, vectors kept (kb.upgrade.reindex_bm25), as `kb set --dictionary`. It runs
in a thread of the app's process, so a click elsewhere on the page (which stops the script) does not stop it half way;
the session that started it shows its progress until it ends.

The text areas' values live in session state per knowledge base, so a rerun (or a visit to another page) keeps the
edits until they are applied."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import streamlit as st

from rag_core.bootstrap import Workbench
from rag_core.dictionary import key, parse_terms
from rag_core.errors import RagError
from rag_core.kb import upgrade
from rag_core.kb.upgrade import RUNNING, STOPPED, UpgradeResult, UpgradeStatus, reindex_bm25
from rag_core.retrieval.dictionary import suggest_for
from rag_core.retrieval.keywords import query_terms

from .access import record
from .errors import show_error
from .i18n import t
from .state import get_settings, knowledge_bases

SUGGEST_LIMIT = 200
POLL_SECONDS = 0.25  # how often a running re-index's progress is drawn


def _keys(name: str) -> tuple[str, str]:
    """The text areas' keys. Streamlit forgets a widget's value on a run that does not draw it (another page), so
    each is kept under a draft key too (`_draft`), which the area is filled from when it is drawn again."""
    return f"kb.bm25_dictionary.{name}", f"kb.bm25_stop_words.{name}"


def _draft(widget_key: str) -> str:
    return f"{widget_key}.draft"


def _suggested_key(name: str) -> str:
    return f"kb.bm25_suggested.{name}"


def _lines(terms: Sequence[str]) -> str:
    return "\n".join(terms)


def _suggest(wb: Workbench, name: str) -> None:
    """The suggestions added under the terms in the dictionary's text area (before it is drawn: a button callback)."""
    dictionary_key, _ = _keys(name)
    try:
        found = suggest_for(wb.store, SUGGEST_LIMIT)
    except RagError as exc:
        st.session_state[_suggested_key(name)] = exc
        return
    current = st.session_state.get(dictionary_key, "")
    try:
        held = {key(term) for term in parse_terms(current)}
    except RagError:  # the area holds a bad line: the suggestions go under it all the same
        held = set()
    new = [s.term for s in found if key(s.term) not in held]
    st.session_state[dictionary_key] = "\n".join(part for part in (current.rstrip("\n"), _lines(new)) if part)
    st.session_state[_suggested_key(name)] = found


def _terms(text: str, what: str) -> tuple[tuple[str, ...] | None, RagError | None]:
    try:
        return parse_terms(text, what), None
    except RagError as exc:
        return None, exc


def bm25_section(wb: Workbench, name: str, may_change: bool, locked: str | None) -> None:
    """The section; `may_change`: whether this person may apply new words (`locked` says why not)."""
    ss = st.session_state
    st.subheader(t("BM25 words"))
    in_use = wb.store  # the words its open collection was made with (rag_core.dictionary)
    st.caption(t("Dictionary: terms BM25 should match whole (service names, commands, product terms). Stop words: "
                 "words BM25 should not count. Applying re-indexes BM25 into a new collection with the same vectors "
                 "(nothing is embedded again), then swaps it in."))
    if (job := ss.get(_job_key(name))) is not None:  # started by this session, still running after a rerun
        _wait(name, job)
        return
    if notice := ss.pop(f"kb.bm25_notice.{name}", None):
        st.success(notice, icon="🔤")
    status = upgrade.read_status(get_settings(), name)
    busy = status is not None and status.state == RUNNING
    if busy:
        st.info(t("An embedder upgrade or a BM25 re-index of {name} is running: apply new words when it has "
                  "finished.", name=name), icon="⏳")
    elif status is not None and status.state == STOPPED and status.kind == "bm25":
        st.warning(t("The last BM25 re-index stopped at {done:,} of {total:,} chunks ({error}); the words in use did "
                     "not change: apply them again.", done=status.done, total=status.total,
                     error=status.error or t("no reason given")), icon="⏸️")
    st.markdown(t("In use: dictionary **{dictionary}** terms · stop words **{stop_words}**",
                  dictionary=len(in_use.bm25_terms), stop_words=len(in_use.stop_words)))
    dictionary_key, stop_key = _keys(name)
    for widget_key, words in ((dictionary_key, in_use.bm25_terms), (stop_key, in_use.stop_words)):
        if widget_key not in ss:
            ss[widget_key] = ss.get(_draft(widget_key), _lines(words))

    left, right = st.columns(2)
    with left:
        dictionary_text = st.text_area(t("Dictionary (one term per line)"), key=dictionary_key, height=200)
        st.button(t("Suggest from headings and code"), key="kb.bm25_suggest", on_click=_suggest, args=(wb, name),
                  help=t("Adds terms of this knowledge base's headings and code that BM25 cuts in pieces, found in "
                         "at least two chunks; review them before applying."))
    with right:
        stop_text = st.text_area(t("Stop words (one per line)"), key=stop_key, height=200)
    ss[_draft(dictionary_key)], ss[_draft(stop_key)] = dictionary_text, stop_text  # kept while on other pages
    suggested = ss.get(_suggested_key(name))
    if isinstance(suggested, RagError):
        show_error(suggested)
    elif suggested is not None:
        if suggested:
            st.caption(t("{n} terms suggested (kind, chunks holding it), added to the dictionary above:",
                         n=len(suggested)))
            kinds = {"heading": t("heading"), "code": t("code")}
            st.dataframe([{t("term"): s.term, t("kind"): kinds.get(s.kind, s.kind), t("chunks"): s.chunks}
                          for s in suggested],
                         hide_index=True, width="stretch", key="kb.bm25_suggestions", height=180)
        else:
            st.caption(t("No terms to suggest: no heading or code term that BM25 cuts in pieces is in two chunks."))

    # the error's text is the original (English, as the CLI and the API word it); show_error translates the sentence
    dictionary, dictionary_error = _terms(dictionary_text, "dictionary")  # i18n: ok
    stop_words, stop_error = _terms(stop_text, "stop words")  # i18n: ok
    for error in (dictionary_error, stop_error):
        if error is not None:
            show_error(error, sentence=t("A term is too long, holds a control character, or there are too many "
                                         "terms."))

    example = st.text_input(t("Example query"), key="kb.bm25_example", placeholder=t("e.g. a query with a product "
                            "term"), help=t("Its BM25 terms with the words in use and with the words above."))
    if example.strip():
        before, after = st.columns(2)
        before.markdown(t("**Now:** {terms}", terms=_shown(query_terms(example, in_use.bm25_terms, in_use.stop_words))))
        if dictionary is not None and stop_words is not None:
            after.markdown(t("**With the words above:** {terms}",
                             terms=_shown(query_terms(example, dictionary, stop_words))))

    unchanged = (dictionary is not None and stop_words is not None and list(dictionary) == list(in_use.bm25_terms)
                 and list(stop_words) == list(in_use.stop_words))
    bad = dictionary is None or stop_words is None
    if st.button(t("Apply (re-index BM25, vectors kept)"), key="kb.bm25_apply", type="primary",
                 disabled=not may_change or bad or unchanged or busy, help=locked) and not bad and may_change:
        _apply(name, dictionary or (), stop_words or ())


def _shown(terms: Sequence[str]) -> str:
    return " · ".join(f"`{term}`" for term in terms) or t("(none)")


@dataclass
class _Job:
    """A re-index running in a thread of this process (so a rerun or a click elsewhere does not stop it half way)."""

    thread: threading.Thread
    status: UpgradeStatus | None = None
    result: UpgradeResult | None = None
    error: BaseException | None = None


def _job_key(name: str) -> str:
    return f"kb.bm25_job.{name}"


def _apply(name: str, dictionary: tuple[str, ...], stop_words: tuple[str, ...]) -> None:
    """Start the re-index in a thread, record it, and wait for it with a progress bar."""
    kbs = knowledge_bases()
    holder: list[_Job] = []

    def run() -> None:
        job = holder[0]
        try:
            job.result = reindex_bm25(kbs, name, dictionary, stop_words,
                                      progress=lambda status: setattr(job, "status", status))
        except BaseException as exc:  # noqa: BLE001 - handed to the page that waits for it
            job.error = exc

    job = _Job(threading.Thread(target=run, name=f"bm25-reindex-{name}", daemon=True))
    holder.append(job)
    job.thread.start()
    record("kbs.set", name, name, dictionary=len(dictionary), stop_words=len(stop_words))
    st.session_state[_job_key(name)] = job
    _wait(name, job)


def _wait(name: str, job: _Job) -> None:
    """The job's progress until it ends, then the page again with the words in use (or its error)."""
    bar = st.progress(0.0, text=t("Re-indexing BM25…"))
    while job.thread.is_alive():
        if (status := job.status) is not None:
            bar.progress(status.fraction, text=t("Re-indexing BM25: {done:,} of {total:,} chunks", done=status.done,
                                                 total=status.total))
        job.thread.join(POLL_SECONDS)
    bar.empty()
    ss = st.session_state
    ss.pop(_job_key(name), None)
    if job.error is not None:
        if not isinstance(job.error, RagError):
            raise job.error
        show_error(job.error)
        return
    info = knowledge_bases().info(name)
    for state_key in (*_keys(name), *map(_draft, _keys(name)), _suggested_key(name)):
        ss.pop(state_key, None)  # filled again with the words now in use
    chunks = job.result.chunks if job.result is not None else info.chunks
    ss[f"kb.bm25_notice.{name}"] = t("BM25 re-indexed ({chunks:,} chunks, none embedded again): dictionary "
                                     "{dictionary} terms, stop words {stop_words}.", chunks=chunks,
                                     dictionary=len(info.dictionary), stop_words=len(info.stop_words))
    st.rerun()
