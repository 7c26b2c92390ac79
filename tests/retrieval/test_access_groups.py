"""Access groups in retrieval (issue 37): documents tagged `access=GROUP` (or below a folder of `access.folders`) are
retrieved only for callers in one of their groups; the filter runs inside the store; an admin of the knowledge base
(AccessScope.reveal) is told how many hits it hid (drop reason `no_access`), nobody else anything about them."""

from __future__ import annotations

import pytest

from rag_core.access.groups import (
    AccessFilter,
    access_filter,
    access_labels,
    document_groups,
    hides,
    parse_folder_rules,
    visible_documents,
)
from rag_core.access.records import UNRESTRICTED, AccessScope, Principal, Role
from rag_core.errors import ConfigError, NotIndexed, RetrievalError
from rag_core.kb.tags import tag
from rag_core.records import Fate, SearchOptions
from rag_core.retrieval import KnowledgeRetriever, LookupParams, StoreSearchPort
from rag_core.retrieval.explain import explain
from rag_core.retrieval.multi import MultiKnowledgeBasePort
from rag_core.scope import parse_scope
from rag_core.store.milvus import filters
from tests.retrieval.memory import InMemorySearchPort

TOPIC = "The disk of the database server fills with log files; rotate the logs and delete old archives. "
DOCS = {
    "public/disk.md": f"# Disk full (public)\n\n{TOPIC}",
    "public/logs.md": "# Logs\n\nRotate the log files daily so the disk does not fill.",
    "team/a-disk.md": f"# Disk full for team A\n\n{TOPIC}Team A keeps its archives on the backup host.",
    "team/b-disk.md": f"# Disk full for team B\n\n{TOPIC}Team B keeps its archives in the bucket.",
    "secret/disk.md": f"# Disk full (secret runbook)\n\n{TOPIC}The secret runbook names the root password vault.",
    "public/cpu.md": "# CPU high\n\nA runaway process keeps the processor busy.",
}
RULES = "secret/**=a,ops"
MODES = ("dense", "bm25", "hybrid")


def port(mode: str = "dense", rules: str = RULES) -> StoreSearchPort:
    base = InMemorySearchPort.from_texts(DOCS, max_size=400, overlap=0)
    tag(base.store, "team/a-disk.md", ["access=a"])
    tag(base.store, "team/b-disk.md", ["access=b"])
    return StoreSearchPort(base.store, base.embedder, SearchOptions(mode=mode, fusion="rrf"),
                           parse_folder_rules(rules))


def retriever(mode: str = "dense", rules: str = RULES) -> KnowledgeRetriever:
    params = LookupParams(retrieve_k=20, return_n=10, max_chunks_per_document=3, search=SearchOptions(mode=mode))
    return KnowledgeRetriever(port(mode, rules), params)


def keys(result) -> list[str]:  # noqa: ANN001
    return [t.evidence_key for t in result.traces]


def docs(result) -> set[str]:  # noqa: ANN001
    return {t.doc_id for t in result.traces}


HIDDEN = {  # the documents each caller may not retrieve
    frozenset(): {"team/a-disk.md", "team/b-disk.md", "secret/disk.md"},
    frozenset({"a"}): {"team/b-disk.md"},
    frozenset({"b"}): {"team/a-disk.md", "secret/disk.md"},
    frozenset({"ops"}): {"team/a-disk.md", "team/b-disk.md"},
}


# ------------------------------------------------------------------------------------ rules and the filter
def test_folder_rules_parse_and_say_what_is_wrong() -> None:
    rules = parse_folder_rules(" runbooks/secret/**=sre ; hr/** = hr, legal\nops=ops ")
    assert [(r.folder, sorted(r.groups)) for r in rules.rules] == [
        ("runbooks/secret", ["sre"]), ("hr", ["hr", "legal"]), ("ops", ["ops"])]
    assert rules.groups_of("runbooks/secret/db/x.md") == {"sre"}
    assert rules.groups_of("runbooks/secretive.md") == frozenset()
    assert rules.groups_of("hr/pay.md") == {"hr", "legal"}
    assert not parse_folder_rules("")
    for bad in ("runbooks", "runbooks/**=", "=sre", "*/secret/**=sre", "hr/**=a b"):
        with pytest.raises(ConfigError, match="access.folders"):
            parse_folder_rules(bad)


def test_a_document_groups_are_its_access_labels_and_its_folder_rules() -> None:
    labels = {"secret/x.md": {"access": ("b",)}, "pub.md": {"team": ("sre",)}}
    rules = parse_folder_rules("secret/**=a")
    assert document_groups("secret/x.md", labels, rules) == {"a", "b"}
    assert document_groups("pub.md", labels, rules) == frozenset()
    assert hides(AccessScope(frozenset({"c"})), "secret/x.md", labels, rules)
    assert not hides(AccessScope(frozenset({"b"})), "secret/x.md", labels, rules)
    assert not hides(AccessScope(frozenset()), "pub.md", labels, rules)
    assert not hides(UNRESTRICTED, "secret/x.md", labels, rules)


def test_a_listing_shows_what_a_lookup_may_retrieve_and_everything_to_an_admin() -> None:
    labels = access_labels({"team/a-disk.md": {"access": ("a",)}},
                           {"public/cpu.md": [{"front_matter": {"access": ["b"]}}]})  # being ingested with a group
    rules = parse_folder_rules(RULES)
    ids = list(DOCS)
    for groups, hidden in {frozenset(): {"team/a-disk.md", "secret/disk.md", "public/cpu.md"},
                           frozenset({"a"}): {"public/cpu.md"}, frozenset({"ops", "b"}): {"team/a-disk.md"}}.items():
        assert visible_documents(AccessScope(groups), ids, labels, rules) == [d for d in ids if d not in hidden]
    assert visible_documents(AccessScope(frozenset(), reveal=True), ids, labels, rules) == ids  # an admin of the kb
    assert visible_documents(UNRESTRICTED, ids, labels, rules) == ids


def test_the_filter_is_one_milvus_expression_with_escaped_literals() -> None:
    labels = {"d.md": {"access": ("b",)}, 'x" or id != ".md': {"access": ("b",)}, "e.md": {"access": ("a", "b")}}
    access = access_filter(AccessScope(frozenset({"a"})), labels, parse_folder_rules("s/**=c"),
                           ["d.md", "s/t/u.md", "pub.md", "e.md"])
    assert access == AccessFilter(("d.md", "s/t/u.md", 'x" or id != ".md'))
    expr = filters.from_mapping({"access": access, "source": "d.md"}, ("source", "access"))
    assert expr == '(doc_id not in ["d.md", "s/t/u.md", "x\\" or id != \\".md"]) and (source == "d.md")'
    assert filters.visible(AccessFilter(())) == ""  # nothing hidden: every row
    assert access.passes("pub.md") and access.passes("e.md") and not access.passes("s/t/u.md")
    assert access_filter(UNRESTRICTED, labels) == AccessFilter(())


# ------------------------------------------------------------------------------------ lookups
@pytest.mark.parametrize("mode", ["dense", "bm25"])
def test_users_in_different_groups_get_the_same_lookup_less_exactly_the_hidden_documents(mode: str) -> None:
    r = retriever(mode)
    everything = r.lookup("disk full rotate log files archives")
    assert docs(everything) >= {"team/a-disk.md", "team/b-disk.md", "secret/disk.md", "public/disk.md"}
    for groups, hidden in HIDDEN.items():
        mine = r.lookup("disk full rotate log files archives", access=AccessScope(groups))
        assert keys(mine) == [k for t, k in zip(everything.traces, keys(everything)) if t.doc_id not in hidden]
        assert "no_access" not in mine.to_dict() and mine.hidden is None  # not an admin: nothing about them
        assert "no_access" not in mine.timings


def test_hybrid_lookups_leave_out_exactly_the_hidden_documents() -> None:
    r = retriever("hybrid")
    everything = r.lookup("disk full rotate log files archives")
    for groups, hidden in HIDDEN.items():
        mine = r.lookup("disk full rotate log files archives", access=AccessScope(groups))
        assert docs(mine) == docs(everything) - hidden


def test_an_admin_is_told_how_many_hits_the_groups_hid_and_nobody_else_is() -> None:
    r = retriever()
    query = "disk full rotate log files archives"
    everything = r.lookup(query, retrieve_k=6, return_n=3)
    hidden_hits = sum(t.doc_id in HIDDEN[frozenset()] for t in everything.traces)
    assert hidden_hits >= 3
    admin = r.lookup(query, retrieve_k=6, return_n=3, access=AccessScope(frozenset(), reveal=True))
    assert admin.hidden == hidden_hits
    assert admin.to_dict()["no_access"] == hidden_hits
    assert "no_access" in admin.timings  # the counting search, timed
    reader = r.lookup(query, retrieve_k=6, return_n=3, access=AccessScope(frozenset()))
    assert keys(reader) == keys(admin)
    assert reader.hidden is None and "no_access" not in reader.to_dict() and "no_access" not in reader.timings
    assert Fate.NO_ACCESS == "no_access"
    principal = Principal("ann", {"kb": Role.ADMIN})
    assert principal.scope("kb").reveal and not Principal("bob", {"kb": Role.READER}).scope("kb").reveal


def test_the_filter_runs_in_the_store_so_a_small_retrieve_k_is_filled_with_visible_documents() -> None:
    r = retriever()
    query = "Disk full for team A, team B and the secret runbook"
    top = r.lookup(query, retrieve_k=3, return_n=3)
    assert docs(top) <= HIDDEN[frozenset()]  # the three best hits are all hidden from a caller in no group
    mine = r.lookup(query, retrieve_k=3, return_n=3, access=AccessScope(frozenset()))
    assert len(mine.traces) == 3 and not docs(mine) & HIDDEN[frozenset()]


def test_a_metadata_filter_counts_only_documents_the_caller_may_see() -> None:
    r = retriever()
    scope = parse_scope(["type=md"])
    mine = r.lookup("disk", scope=scope, access=AccessScope(frozenset()))
    assert mine.scope is not None and mine.scope.documents == 3 and mine.scope.removed == 0
    admin = r.lookup("disk", scope=scope, access=AccessScope(frozenset(), reveal=True))
    assert admin.scope is not None and admin.scope.documents == 6


def test_fetched_hits_are_not_reused_for_another_scope() -> None:
    r = retriever()
    params = r.params(access=AccessScope(frozenset({"a"})))
    fetched = r.fetch("disk", params)
    with pytest.raises(RetrievalError, match="fetch again"):
        r.assemble(fetched, r.params(access=AccessScope(frozenset({"b"}))))


def test_explain_treats_a_hidden_document_as_unknown_unless_the_caller_may_know() -> None:
    r = retriever()
    query = "disk full rotate log files archives"
    with pytest.raises(NotIndexed) as hidden:
        explain(r, r.port.store, query, "team/a-disk.md", access=AccessScope(frozenset({"b"})))
    with pytest.raises(NotIndexed) as unknown:
        explain(r, r.port.store, query, "team/nothing.md", access=AccessScope(frozenset({"b"})))
    assert str(hidden.value).replace("team/a-disk.md", "X") == str(unknown.value).replace("team/nothing.md", "X")
    shown = explain(r, r.port.store, query, "team/a-disk.md", access=AccessScope(frozenset({"b"}), reveal=True))
    assert {c.fate for c in shown.chunks} == {Fate.NO_ACCESS} and shown.fix is None
    assert "access groups" in shown.verdict
    mine = explain(r, r.port.store, query, "team/a-disk.md", access=AccessScope(frozenset({"a"})))
    assert mine.retrieved


def test_explain_by_answer_text_never_finds_it_in_a_hidden_document() -> None:
    r = retriever()
    with pytest.raises(RetrievalError, match="answer text was not found"):
        explain(r, r.port.store, "where are the archives", None, "keeps its archives in the bucket",
                access=AccessScope(frozenset({"a"})))
    found = explain(r, r.port.store, "where are the archives", None, "keeps its archives in the bucket",
                    access=AccessScope(frozenset({"b"})))
    assert found.expect.doc_id == "team/b-disk.md"


def test_several_knowledge_bases_filter_each_by_its_own_rules_and_sum_what_they_hid() -> None:
    one, two = port(rules=""), port(rules="public/**=x")
    multi = KnowledgeRetriever(MultiKnowledgeBasePort({"one": one, "two": two}),
                               LookupParams(retrieve_k=30, return_n=10, search=SearchOptions(mode="dense")))
    query = "disk full rotate log files archives"
    mine = multi.lookup(query, access=AccessScope(frozenset({"a"}), reveal=True))
    seen = docs(mine)
    assert "one:team/a-disk.md" in seen and "one:secret/disk.md" in seen and "one:public/disk.md" in seen
    assert "two:public/disk.md" not in seen and "one:team/b-disk.md" not in seen
    assert mine.hidden is not None and mine.hidden > 0
    assert multi.port.hides(AccessScope(frozenset({"a"})), "two:public/cpu.md")


def test_a_restricted_lookup_over_a_port_that_cannot_filter_is_refused() -> None:
    class Plain:
        def configured(self, options):  # noqa: ANN001, ANN202
            return self

        def search(self, query, k, filters=None):  # noqa: ANN001, ANN202
            raise AssertionError("searched unfiltered")

    r = KnowledgeRetriever(Plain())
    with pytest.raises(RetrievalError, match="access groups"):
        r.lookup("disk", access=AccessScope(frozenset({"a"})))


# ------------------------------------------------------------------------------------ the agent's tool
def test_the_agent_tool_retrieves_what_the_principal_it_serves_may() -> None:
    from rag_core.access.groups import scope_over
    from rag_core.agent import Agent, Toolbox, knowledge_base_tool
    from rag_core.agent.events import ToolResultEvent

    r = retriever()
    query = "Disk full for team A, team B and the secret runbook"

    def looked_up(agent: Agent, **kwargs) -> set[str]:  # noqa: ANN003
        found = [e.lookup for e in agent.run(query, **kwargs) if isinstance(e, ToolResultEvent)]
        assert found and found[0] is not None
        assert "no_access" not in found[0].to_dict() or found[0].params.access.reveal
        return docs(found[0])

    everyone = Agent(Toolbox([knowledge_base_tool(r)]))
    assert looked_up(everyone) >= HIDDEN[frozenset()]
    bob = Principal("bob", {"kb": Role.READER}, frozenset({"b"}))
    served = Agent(Toolbox([knowledge_base_tool(r, access=scope_over(bob, ["kb"]))]))
    assert not looked_up(served) & HIDDEN[frozenset({"b"})] and "team/b-disk.md" in looked_up(served)
    # a shared agent told the scope of each turn's person
    assert not looked_up(everyone, access=AccessScope(frozenset({"a"}))) & HIDDEN[frozenset({"a"})]
    assert scope_over(bob, ["kb", "other"]) == AccessScope(frozenset({"b"}))
    assert scope_over(Principal("ann", {"*": Role.ADMIN}), ["kb", "x"]).reveal
