"""Sign-in and the per-user view of the app (ui/access.py, issue 37): on loopback no sign-in; served to others or
with auth.required, a sign-in screen before any page, a wrong token refused, a good one opening the pages with
only what that user may see and do. The access store is a MemoryAccessStore (bootstrap.build_access_store patched).

Under AppTest only the first run goes through app.py (the sidebar); later runs run the page alone, which signs in
first too (`current_principal()` on every page). Tests that look at the sidebar sign in before the first run by
putting the Principal in session state, as the sign-in form does."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import ui.access
from rag_core import bootstrap
from rag_core.access.memory import MemoryAccessStore
from rag_core.access.records import EVERYONE, Principal, Role
from rag_core.bootstrap import Workbench
from rag_core.kb.tags import tag
from tests.ui.apptest_helpers import APP
from ui.access import is_loopback, proxy_user, trusted
from ui.state import knowledge_bases

DEFAULT = "biz"  # milvus.collection's default: the seeded knowledge base


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryAccessStore]:
    made = MemoryAccessStore()
    monkeypatch.setattr(bootstrap, "build_access_store", lambda settings, env=None: made)
    ui.access.clear_access_store()
    yield made
    ui.access.clear_access_store()


@pytest.fixture
def required(monkeypatch: pytest.MonkeyPatch, store: MemoryAccessStore) -> MemoryAccessStore:
    monkeypatch.setenv("RAG_AUTH_REQUIRED", "true")
    return store


def start(principal: Principal | None = None, **query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    if principal is not None:
        at.session_state[ui.access.PRINCIPAL] = principal
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, at.exception
    return at


def on_page(at: AppTest, page: str) -> AppTest:
    at.switch_page(page)
    at.run()
    assert not at.exception, at.exception
    return at


def sign_in(at: AppTest, token: str) -> AppTest:
    at.run()  # the page draws the form (see the module docstring), then it is filled
    at.text_input(key="access.token").input(token)
    at.button(key="access.submit").click().run()
    assert not at.exception, at.exception
    return at


def titles(at: AppTest) -> list[str]:
    return [str(x.value) for x in at.title]


def captions(at: AppTest) -> str:
    return "\n".join(str(c.value) for c in at.caption)


def user(store: MemoryAccessStore, name: str, **roles: Role) -> Principal:
    made, _ = store.create_user(name, roles)
    return made.principal()


# ------------------------------------------------------------------------------------------ who signs in
def test_loopback_is_one_persons_tool_without_sign_in(kb, store):
    at = start()
    assert titles(at) == ["🧰 RAG workbench"]
    assert not at.text_input  # no token asked for
    assert ui.access.PRINCIPAL not in at.session_state
    assert not [b for b in at.sidebar.button if b.key == "access.sign_out"]


def test_auth_required_shows_sign_in_before_any_page(kb, required):
    at = start()
    assert titles(at) == ["🔐 Sign in"]
    assert at.text_input(key="access.token").label == "Token"
    assert not at.sidebar.selectbox  # no knowledge-base switcher, nothing of the pages
    assert "users create" in captions(at)


def test_served_to_others_shows_sign_in(kb, store, monkeypatch):
    monkeypatch.setattr(ui.access, "server_address", lambda: "0.0.0.0")
    assert titles(start()) == ["🔐 Sign in"]


def test_no_one_can_sign_in_yet_says_how(kb, required):
    at = start()
    assert "No one can sign in yet" in at.info[0].value


def test_a_wrong_token_is_refused_and_stays_on_sign_in(kb, required):
    user(required, "ann", **{"*": Role.READER})
    at = sign_in(start(), "rwb_wrong")
    assert titles(at) == ["🔐 Sign in"]
    assert "not valid" in at.error[0].value
    assert ui.access.PRINCIPAL not in at.session_state


def test_a_good_token_opens_the_pages_and_the_session_keeps_no_token(kb, required):
    _, token = required.create_user("ann", {"*": Role.READER})
    at = sign_in(start(), token)
    assert titles(at) == ["🧰 RAG workbench"]
    assert at.session_state[ui.access.PRINCIPAL].name == "ann"
    kept = [repr(at.session_state[k]) for k in at.session_state]
    assert not [v for v in kept if token in v]


def test_the_api_token_signs_in_as_everyone(kb, required, monkeypatch):
    monkeypatch.setenv("RAG_API_TOKEN", "a-long-enough-api-token-1234")
    at = sign_in(start(), "a-long-enough-api-token-1234")
    assert titles(at) == ["🧰 RAG workbench"] and at.session_state[ui.access.PRINCIPAL] == EVERYONE


def test_a_revoked_user_is_signed_out_at_once(kb, required):
    ann = user(required, "ann", **{"*": Role.READER})
    at = start(ann)
    assert titles(at) == ["🧰 RAG workbench"]
    required.revoke("ann")
    at.run()
    assert titles(at) == ["🔐 Sign in"] and "revoked" in at.warning[0].value


def test_the_sidebar_says_who_is_signed_in_with_sign_out(kb, required):
    # Clicking it is tests/e2e/test_e2e_sign_in.py's: the sidebar is drawn by app.py's run only (module docstring).
    at = start(user(required, "ann", **{"*": Role.READER}))
    assert "Signed in as **ann**" in "\n".join(str(c.value) for c in at.sidebar.caption)
    assert at.sidebar.button(key="access.sign_out").label == "Sign out"


def test_a_trusted_proxy_signs_in_without_a_token(kb, required, monkeypatch):
    user(required, "ann", **{"*": Role.READER})
    monkeypatch.setenv("RAG_AUTH_TRUSTED_PROXIES", "10.0.0.5")
    monkeypatch.setattr(ui.access, "_request", lambda: ({"X-Forwarded-User": "ann"}, "10.0.0.5"))
    at = start()
    assert titles(at) == ["🧰 RAG workbench"] and at.session_state[ui.access.PRINCIPAL].name == "ann"
    assert not [b for b in at.sidebar.button if b.key == "access.sign_out"]  # signing out is the proxy's


def test_the_header_from_anyone_else_is_ignored(kb, required, monkeypatch):
    user(required, "ann", **{"*": Role.ADMIN})
    monkeypatch.setenv("RAG_AUTH_TRUSTED_PROXIES", "10.0.0.5")
    monkeypatch.setattr(ui.access, "_request", lambda: ({"X-Forwarded-User": "ann"}, "10.0.0.9"))
    assert titles(start()) == ["🔐 Sign in"]


def test_trusted_proxies_and_loopback():
    assert trusted("10.0.0.5", "10.0.0.5") and trusted("10.0.0.7", "10.0.0.0/24, 192.168.1.1")
    assert not trusted("10.0.0.9", "10.0.0.5") and not trusted("10.0.0.5", "") and not trusted("x", "10.0.0.5")
    # Streamlit reports a loopback peer as None: trusted only when loopback is listed.
    assert trusted(None, "127.0.0.1") and trusted(None, "localhost") and not trusted(None, "10.0.0.5")
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("") and not is_loopback(None)


def test_proxy_user_reads_the_configured_header(monkeypatch):
    from rag_core.config import load_settings

    settings = load_settings(env={"RAG_AUTH_TRUSTED_PROXIES": "10.0.0.5", "RAG_AUTH_USER_HEADER": "X-Remote-User"})
    assert proxy_user(settings, {"X-Remote-User": " bob "}, "10.0.0.5") == "bob"
    assert proxy_user(settings, {"X-Forwarded-User": "bob"}, "10.0.0.5") is None
    assert proxy_user(settings, {"X-Remote-User": "bob"}, "10.0.0.6") is None


# ------------------------------------------------------------------------------------------ what they see
def test_a_reader_cannot_see_upload_nor_manage_knowledge_bases(kb, required):
    at = on_page(start(user(required, "ann", **{DEFAULT: Role.READER})), "pages/knowledge_base.py")
    assert not at.get("file_uploader")
    assert f"Needs the editor role on '{DEFAULT}'." in captions(at)
    assert "Needs the admin role on every knowledge base." in captions(at)
    assert not [tab for tab in at.tabs if tab.label == "Create"]
    assert at.button(key="kb.reindex_all").disabled and at.button(key="kb.reindex_all").help


def test_an_editor_uploads_but_does_not_manage_knowledge_bases(kb, required):
    at = on_page(start(user(required, "ed", **{DEFAULT: Role.EDITOR})), "pages/knowledge_base.py")
    assert at.get("file_uploader")
    assert not at.button(key="kb.reindex_all").disabled
    assert not [tab for tab in at.tabs if tab.label == "Create"]


def test_an_admin_manages_knowledge_bases(kb, required):
    at = on_page(start(user(required, "root", **{"*": Role.ADMIN})), "pages/knowledge_base.py")
    assert at.get("file_uploader") and [tab for tab in at.tabs if tab.label == "Create"]


def test_the_switcher_lists_only_readable_knowledge_bases(fresh_kb: Workbench, required):
    knowledge_bases().create("team_b", {})
    assert set(knowledge_bases().names()) >= {DEFAULT, "team_b"}
    at = start(user(required, "bea", team_b=Role.READER))
    switcher = at.sidebar.selectbox(key="kb")
    assert switcher.options == ["team_b"] and switcher.value == "team_b"
    # A link naming one they may not read shows theirs, as for a knowledge base that does not exist.
    at = start(user(required, "cy", team_b=Role.READER), kb=DEFAULT)
    assert at.sidebar.selectbox(key="kb").value == "team_b"
    assert at.sidebar.selectbox(key="kb").options == ["team_b"]


def test_no_readable_knowledge_base_says_so(kb, required):
    at = start(user(required, "dee"))
    assert "may not read any knowledge base" in "\n".join(str(i.value) for i in at.sidebar.info)
    assert not at.exception


# ------------------------------------------------------------------------------------------ who did what
def test_an_upload_is_in_the_audit_log_under_the_signed_in_user(fresh_kb: Workbench, required):
    at = on_page(start(user(required, "ed", **{DEFAULT: Role.EDITOR})), "pages/knowledge_base.py")
    (uploader,) = [w for w in at.file_uploader if w.key.startswith("kb.files.")]
    uploader.set_value([("cpu.md", b"# CPU\n\nWhen CPU is high, check the top pods first.\n", "text/markdown")])
    at.run()
    at.button(key="kb.ingest").click().run()
    assert not at.exception, at.exception
    (event,) = required.audit(action="documents.")
    assert (event.user, event.action, event.kb, event.target) == ("ed", "documents.upload", DEFAULT, "cpu.md")


def test_the_debuggers_chunk_editor_is_an_editors(kb, required):
    # A reader sees the lookup and why there is no editor; an editor gets the editor.
    reader = on_page(start(user(required, "ann", **{DEFAULT: Role.READER}), q="disk full"), "pages/debugger.py")
    assert reader.dataframe and not [b for b in reader.button if b.key == "dbg.edit_save"]
    assert f"Needs the editor role on '{DEFAULT}'." in captions(reader)
    editor = on_page(start(user(required, "ed", **{DEFAULT: Role.EDITOR}), q="disk full"), "pages/debugger.py")
    assert [b for b in editor.button if b.key == "dbg.edit_save"]


def test_a_reader_cannot_load_the_sample_and_is_told_why(fresh_kb: Workbench, required):
    at = start(user(required, "ann", **{DEFAULT: Role.READER}))
    sample = at.button(key="load_sample")
    assert sample.disabled and sample.help == f"Needs the editor role on '{DEFAULT}'."


def test_evaluation_runs_and_test_sets_are_an_editors(kb, required):
    at = on_page(start(user(required, "ann", **{DEFAULT: Role.READER})), "pages/evaluation.py")
    assert not [b for b in at.button if b.key in ("eval_run", "eval_gen_run", "eval_ans_run")]
    assert f"Needs the editor role on '{DEFAULT}'." in captions(at)
    at = on_page(start(user(required, "ed", **{DEFAULT: Role.EDITOR})), "pages/evaluation.py")
    assert [b for b in at.button if b.key == "eval_run"] and [b for b in at.button if b.key == "eval_gen_run"]


def test_the_chat_offers_only_readable_knowledge_bases(fresh_kb: Workbench, required):
    knowledge_bases().create("team_c", {})
    at = on_page(start(user(required, "bea", team_c=Role.READER)), "pages/chat.py")
    assert at.multiselect(key="chat.kbs").options == ["team_c"]


def test_a_chat_turn_is_recorded_under_the_signed_in_user(kb, required):
    from ui.state import get_turn_store

    at = on_page(start(user(required, "ann", **{DEFAULT: Role.READER})), "pages/chat.py")
    at.chat_input(key="chat.input").set_value("Who asked about a full disk?").run()
    assert not at.exception, at.exception
    (turn,) = [t for t in get_turn_store().find(limit=1000) if t.question == "Who asked about a full disk?"][:1]
    assert turn.user_name == "ann"
    assert [t.question for t in get_turn_store().find(user="ann", limit=1000)][:1] == [turn.question]


# ------------------------------------------------------------------------------------------ access groups
KB_PAGE = "pages/knowledge_base.py"
HIDDEN = "cpu_high.md"  # a document of the seeded knowledge base


def listed(at: AppTest) -> pd.DataFrame:
    (frame,) = [d.value for d in at.dataframe if "ingested at" in d.value.columns]
    return frame


def test_a_document_of_a_group_is_listed_for_its_members_and_admins_only(kb, required):
    tag(kb.store, HIDDEN, ["access=sre"])
    try:
        outsider = on_page(start(user(required, "bob", **{DEFAULT: Role.READER})), KB_PAGE)
        assert HIDDEN not in list(listed(outsider)["doc_id"]) and len(listed(outsider)) == 2
        assert "access groups" not in listed(outsider).columns
        assert HIDDEN not in outsider.multiselect(key="kb.selected").options
        member, _ = required.create_user("sam", {DEFAULT: Role.READER}, ["sre"])
        assert HIDDEN in list(listed(on_page(start(member.principal()), KB_PAGE))["doc_id"])
        admin = listed(on_page(start(user(required, "ann", **{DEFAULT: Role.ADMIN})), KB_PAGE))
        assert len(admin) == 3 and dict(zip(admin["doc_id"], admin["access groups"], strict=True))[HIDDEN] == "sre"
    finally:
        tag(kb.store, HIDDEN, ["access="])  # untagged again: the shared knowledge base as other tests know it


def test_an_admin_sets_the_folder_rules_and_a_reader_has_no_such_widget(fresh_kb: Workbench, required):
    reader = on_page(start(user(required, "bob", **{DEFAULT: Role.READER})), KB_PAGE)
    assert not [a for a in reader.text_area if a.key == "kb.access_folders"]
    at = on_page(start(user(required, "ann", **{DEFAULT: Role.ADMIN})), KB_PAGE)
    at.text_area(key="kb.access_folders").input("secret/**=sre\nhr/*.md=hr").run()  # Save is enabled by a change
    at.button(key="kb.access_save").click().run()
    assert not at.exception, at.exception
    (error,) = at.error
    assert "'hr/*.md=hr' is not FOLDER/**=GROUP" in error.value and "\n" not in error.value
    assert knowledge_bases().get(DEFAULT).settings.get("access.folders", "") == ""  # nothing saved
    at.text_area(key="kb.access_folders").input("secret/**=sre\nhr/**=hr,legal").run()
    at.button(key="kb.access_save").click().run()
    assert not at.exception, at.exception
    assert knowledge_bases().get(DEFAULT).settings["access.folders"] == "secret/**=sre\nhr/**=hr,legal"
    assert "Saved the access rules" in "\n".join(str(s.value) for s in at.success)
    (event,) = required.audit(action="kbs.set")
    assert (event.user, event.kb, event.detail) == ("ann", DEFAULT, {"access.folders": "secret/**=sre\nhr/**=hr,legal"})
