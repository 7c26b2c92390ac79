"""Retrieval debugger (AppTest) for a signed-in user with access groups: a document tagged for a group they are not in
is absent from every list and count; an admin of the knowledge base sees how many hits it hid (`No access`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import ui.lookup
from rag_core.access.records import Principal, Role
from rag_core.kb.tags import tag
from tests.ui.apptest_helpers import app_at, texts

PAGE = "pages/debugger.py"
QUERY = "CPU usage high alert"
HIDDEN = "cpu_high.md"


@pytest.fixture
def tagged(kb) -> Iterator[str]:
    tag(kb.store, HIDDEN, ["access=sre"])
    yield kb.settings.kb_name
    tag(kb.store, HIDDEN, ["access="])  # untagged again: the shared knowledge base as other tests know it


def signed_in_as(monkeypatch, principal: Principal) -> None:
    monkeypatch.setattr(ui.lookup, "signed_in", lambda: principal)


def hits_frame(at):  # noqa: ANN001, ANN201
    return next(d.value for d in at.dataframe if "dense #" in d.value.columns)


def test_a_reader_outside_the_group_sees_nothing_of_the_hidden_document(kb, tagged, monkeypatch):
    everything = hits_frame(app_at(PAGE, q=QUERY, retrieve_k="12"))
    assert any(k.startswith(HIDDEN) for k in everything["evidenceKey"])
    signed_in_as(monkeypatch, Principal("bob", {tagged: Role.READER}, frozenset({"dba"})))
    at = app_at(PAGE, q=QUERY, retrieve_k="12")
    assert not at.exception
    hits = hits_frame(at)
    assert len(hits) == 12 and not any(k.startswith(HIDDEN) for k in hits["evidenceKey"])
    assert "No access" not in {m.label for m in at.metric}
    assert HIDDEN not in at.selectbox(key="expect").options
    shown = texts(at) + texts(at, "caption") + "".join(str(j.value) for j in at.json)
    assert f"{HIDDEN}#chunk" not in shown and "no access" not in shown.lower()  # (other documents' text may name it)


def test_an_admin_of_the_knowledge_base_is_told_how_many_hits_were_hidden(kb, tagged, monkeypatch):
    signed_in_as(monkeypatch, Principal("ann", {tagged: Role.ADMIN}))
    at = app_at(PAGE, q=QUERY, retrieve_k="12")
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["No access"]) > 0
    assert "no access" in texts(at, "caption")
    signed_in_as(monkeypatch, Principal("sam", {tagged: Role.READER}, frozenset({"sre"})))
    at = app_at(PAGE, q=QUERY, retrieve_k="12")
    assert any(k.startswith(HIDDEN) for k in hits_frame(at)["evidenceKey"])
