"""The debugger's lookup with a per-session cache of fetched hits.

`KnowledgeRetriever.fetch` (the search port: embedding + Milvus) is the expensive half; `assemble`
(identity, dedup, caps, return-n, projection) is pure and fast. The fetched hits are cached under
everything that decides them — the query, retrieve-k, the search options, filters and rerank settings —
so moving the return-n or per-document-cap slider runs `assemble` only (no search, no reranker call).
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Mapping, MutableMapping
from typing import Any, Literal, TypedDict
from urllib.parse import urlencode

import streamlit as st

from rag_core.access.records import AccessScope, Principal
from rag_core.errors import TurnNotFound
from rag_core.feedback import TurnRecord, TurnStore
from rag_core.retrieval import Fetched, KnowledgeRetriever, LookupParams, LookupResult
from rag_core.retrieval.explain import ChunkSource, explain
from rag_core.retrieval.options import LOOKUP_OPTIONS
from rag_core.retrieval.spans import traced_lookup

from .access import current_principal
from .i18n import LANG_PARAM, N_, browser_language, language, t, tn
from .navigation import page_file
from .reasons import phrases, rewrite_outcome

CACHE_SIZE = 8
DEBUGGER_PAGE = "pages/debugger.py"
DEBUGGER_URL_PATH = "debugger"
KNOWLEDGE_BASE_PAGE = "pages/knowledge_base.py"
NO_DOCUMENT_MATCHES = "warning.no_document_matches"  # a filter that matched no document (rag_core/scope.py)
NO_MATCHES_IN_APP = N_("The filter {filter} matches no document (of {documents:,}): nothing was searched. Check the "
                       "values: the Knowledge base page shows each document's metadata.")
# A link from another page names a whole lookup (`?replay=1`): the debugger's controls it does not name start at
# their defaults. Without it they would come back as this session left them: the debugger's widgets are bound to
# the URL with persist_state="session", so a page link that leaves `compare` out reopens compare mode with the
# earlier `kb_b` (and an earlier filter, expected document, ...), and `compare=false` cannot say otherwise
# (Streamlit drops a bound parameter at its default before reading it).
REPLAY = "replay"
# The debugger's "Previous turns" box: the conversation before the query, one message per line ("user: ...",
# "assistant: ..."), read by rag_core.retrieval.rewrite.read_history_file; bound to the URL so links carry it.
HISTORY = "history"
# The debugger's widgets bound to the URL besides the lookup options' (each under its option's name).
DEBUGGER_KEYS = ("q", HISTORY, "compare", "kb_b", "expect", "expect_chunk", "answer")


class URLBound(TypedDict):
    """The keyword arguments that bind a widget to its URL query parameter (`**bound`), typed as Streamlit's."""

    bind: Literal["query-params"]
    persist_state: Literal["page", "session"]


def signed_in() -> Principal:
    """Who this session's lookups are for: the one place the app's sign-in (`ui.access.current_principal`, which the
    page called first) reaches the lookups; the one person of a local workbench sees every document."""
    return current_principal(check=False)


def access_of(kb: str) -> AccessScope:
    """The access scope of this session's lookups on knowledge base `kb` (its user's groups; every document for the
    one person)."""
    return signed_in().scope(kb)


def fetch_key(query: str, params: LookupParams) -> Hashable:
    filters = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in params.filters.items())) \
        if params.filters else None
    return (query.strip(), params.retrieve_k, params.search, filters, params.rerank, params.scope, params.rewrite,
            params.history, params.access)


def cached_lookup(retriever: KnowledgeRetriever, query: str, params: LookupParams,
                  cache: MutableMapping[Hashable, Fetched]) -> tuple[LookupResult, bool]:
    """(result, True when the hits came from the cache). `cache` is a dict kept in session state;
    it holds the last CACHE_SIZE fetches, most recent last."""
    key = fetch_key(query, params)
    with traced_lookup(query, "debugger.lookup") as done:  # a trace, like every lookup (rag_core.tracing)
        fetched = cache.pop(key, None)
        hit = fetched is not None
        if fetched is None:
            fetched = retriever.fetch(query, params)
        cache[key] = fetched  # re-inserted: most recent last
        while len(cache) > CACHE_SIZE:
            cache.pop(next(iter(cache)))
        return done(retriever.assemble(fetched, params)), hit


def cached_explanation(retriever: KnowledgeRetriever, source: ChunkSource, query: str, params: LookupParams,
                       expect: str | None, answer: str | None,
                       cache: MutableMapping[Hashable, dict[str, Any]]) -> dict[str, Any]:
    """`explain(...).to_dict()`, kept per (query, settings, expectation) in a session dict: moving an
    unrelated widget does not search again. Raises RagError for bad input (a missing document...)."""
    key = (fetch_key(query, params), params.return_n, params.max_chunks_per_document, params.thresholds, expect or "",
           answer or "")
    if key not in cache:
        cache[key] = explain(retriever, source, query, expect or None, answer or None,
                             retrieve_k=params.retrieve_k, return_n=params.return_n,
                             max_chunks_per_document=params.max_chunks_per_document, search=params.search,
                             rerank=params.rerank, filters=params.filters, thresholds=params.thresholds,
                             scope=params.scope, rewrite=params.rewrite, history=params.history,
                             access=params.access).to_dict()
    while len(cache) > CACHE_SIZE:
        cache.pop(next(iter(cache)))
    return cache[key]


def debugger_query_params(query: str, params: LookupParams | Mapping[str, Any] | None = None,
                          expect: str | None = None, *, replay: bool = False, **extra: Any) -> dict[str, str]:
    """Query parameters that open the retrieval debugger pre-filled with this lookup
    (`st.page_link(DEBUGGER_PAGE, query_params=...)`, or `?` + urlencode for a plain link); `expect`
    (a doc_id) opens its "Why wasn't it retrieved?" panel on that document; `extra`: more widget values
    by key (None and "" are left out). `replay`: a link from another page, which opens exactly this lookup (the
    controls it does not name at their defaults, compare mode off: `open_replay`). The language goes along
    (`lang`) when this session chose one (the switcher, `?lang=`) other than the browser's, which the opened page
    would take anyway."""
    out = {"q": query}
    if expect:
        out["expect"] = expect
    out.update({k: str(v) for k, v in extra.items() if v is not None and v != ""})
    if params is not None:
        if isinstance(params, LookupParams):
            params = params.to_dict()
        for name in ("retrieve_k", "return_n", "max_chunks_per_document"):
            if params.get(name) is not None:
                out[name] = str(params[name])
        mode = params.get("search_mode") or params.get("mode")
        if mode:
            out["mode"] = str(mode)
        if params.get("score_threshold"):
            out["score_threshold"] = str(params["score_threshold"])
        expand, budgets = params.get("expand") or {}, params.get("projection") or {}
        for name, value in (("expand", expand.get("mode")), ("expand_neighbours", expand.get("neighbours")),
                            ("parent_max_size", expand.get("parent_max_size")),
                            ("block_tokens", budgets.get("max_tokens_per_item")),
                            ("context_tokens", budgets.get("max_total_tokens"))):
            if value is not None:
                out[name] = str(value)
        if expand.get("merge") is not None:
            out["merge"] = "true" if expand["merge"] else "false"
    if replay:
        out[REPLAY] = "1"
    if LANG_PARAM not in out and ((lang := language()) != browser_language() or LANG_PARAM in st.query_params):
        out[LANG_PARAM] = lang  # last: the other parameters keep their places in the query string
    return out


def debugger_url(query: str, params: LookupParams | Mapping[str, Any] | None = None,
                 expect: str | None = None, **extra: Any) -> str:
    """A relative URL to the debugger for this lookup, e.g. for a link column (it opens a new tab)."""
    return f"{DEBUGGER_URL_PATH}?{urlencode(debugger_query_params(query, params, expect, **extra))}"


def open_replay() -> None:
    """Called by the debugger before its widgets: on a link from another page (`replay`), forget the values this
    session left in the controls the link does not name, so they start at their defaults, and drop the marker
    (the next rerun is the person's own)."""
    if REPLAY not in st.query_params:
        return
    named = set(st.query_params)
    for key in (*DEBUGGER_KEYS, *(o.name for o in LOOKUP_OPTIONS)):
        if key not in named and key in st.session_state:
            del st.session_state[key]
    del st.query_params[REPLAY]


def lookup_warnings(data: Mapping[str, Any]) -> None:
    """A lookup's warnings (`LookupResult.to_dict()`) in the person's language. rag_core's sentence for a filter that
    matches no document sends the person to the command line (`docs --json`): here it names the page that shows each
    document's metadata and links there, and the command follows as a secondary hint."""
    said = data.get("warning_phrases") or []
    texts = phrases(data, "warnings")
    for n, warning in enumerate(texts):
        found = said[n] if len(said) == len(texts) else {}
        if found.get("code") != NO_DOCUMENT_MATCHES:
            st.warning(warning, icon="⚠️")
            continue
        st.warning(t(NO_MATCHES_IN_APP, **found["params"]), icon="⚠️")
        st.page_link(page_file(KNOWLEDGE_BASE_PAGE), icon="📚",
                     label=t("Each document's metadata: the Knowledge base page, under Metadata and tags"))
        st.caption(t("From the command line: `{command}`", command="python -m rag_core docs --json"))


# ------------------------------------------------------------------------------------ the conversation before
def history_text(pairs: Iterable[tuple[str, str]], params: Mapping[str, Any] | None = None) -> str:
    """Earlier (question, answer) pairs as the debugger's "Previous turns" box reads them: "user: ..." and
    "assistant: ..." lines (an answer's further lines continue it). `params`: the replayed lookup's
    (`LookupParams.to_dict()`); when it says how many earlier messages the lookup was given (`history_turns`),
    only that many of the last are kept, so the replay is that lookup."""
    messages = [f"{role}: {text.strip()}" for question, answer in pairs
                for role, text in (("user", question), ("assistant", answer)) if text.strip()]
    given = (params or {}).get("history_turns")
    if isinstance(given, int) and 0 < given < len(messages):
        messages = messages[-given:]
    return "\n".join(messages)


def recorded_history(store: TurnStore, turn: TurnRecord, pairs: int) -> list[tuple[str, str]]:
    """The (question, answer) pairs asked before a recorded turn in its chat session, as the agent was given them:
    the last `pairs` answered ones (chat.history-pairs); those the turns store no longer keeps are left out."""
    found: list[tuple[str, str]] = []
    for index in range(turn.turn_index - 1, -1, -1):
        if len(found) >= pairs or not turn.session_id:
            break
        try:
            earlier = store.get(session_id=turn.session_id, turn_index=index)
        except TurnNotFound:
            continue
        if earlier.answer.strip() and not earlier.error:
            found.append((earlier.question, earlier.answer))
    return found[::-1]


_MARKDOWN = re.compile(r"([\\`*_\[\]<|~$])")


def _plain(text: str) -> str:
    """`text` shown as it is inside markdown (no emphasis, links or formulas made of its characters)."""
    return _MARKDOWN.sub(r"\\\1", text)


def rewrite_view(data: Mapping[str, Any], *, changed_only: bool = False, prefix: str = "") -> None:
    """The question as asked and the one searched, with what the rewrite did (a lookup's `rewrite`:
    `LookupResult.to_dict()`); nothing for a lookup without earlier turns. `changed_only`: only when the searched
    question differs from the asked one (the chat's tool panel). `prefix`: which side (compare mode)."""
    rewrite = data.get("rewrite")
    if not rewrite or (changed_only and rewrite["searched"] == rewrite["original"]):
        return
    with st.container(border=True):
        st.markdown(prefix + t("**Asked:** {question}", question=_plain(rewrite["original"])) + "  \n"
                    + t("**Searched:** {question}", question=_plain(rewrite["searched"])))
        turns = int(rewrite.get("turns") or 0)
        st.caption(rewrite_outcome(rewrite) + (tn(" · after {n} earlier message", " · after {n} earlier messages",
                                                  turns) if turns else ""))
