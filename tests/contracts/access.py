"""The AccessStore contract (rag_core.ports.AccessStore), checked on every adapter: the in-memory store (the fake the
service and CLI tests use) and the SQL store on SQLite and on PostgreSQL (tests/access/test_access_contract.py).

A test module subclasses `AccessStoreContract` and provides `store` (an open, empty store) and `stored`: a function
returning everything the store keeps as one text (for the SQL store, every row of every table, and the database's
files where there are some), in which no raw token may appear.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from rag_core.access.records import ALL, AuditEvent, Principal, Role, User
from rag_core.access.tokens import PREFIX, token_hash
from rag_core.errors import AccessError
from rag_core.ports import AccessStore

READS = {"docs": Role.READER}


class AccessStoreContract:
    @pytest.fixture
    def store(self) -> AccessStore:
        raise NotImplementedError("a test module provides the adapter under test")

    @pytest.fixture
    def stored(self, store: AccessStore) -> Callable[[], str]:
        raise NotImplementedError("a test module says how to read everything its store keeps")

    def test_is_an_access_store(self, store: AccessStore) -> None:
        assert isinstance(store, AccessStore)
        assert store.where and "password" not in store.where

    def test_empty(self, store: AccessStore) -> None:
        assert store.users() == [] and store.users(include_revoked=True) == []
        assert store.user("ann") is None and store.principal("ann") is None
        assert store.authenticate(PREFIX + "nobody") is None and store.authenticate("") is None
        assert store.audit() == []

    # -- users and tokens

    def test_a_created_user_is_read_back_exactly(self, store: AccessStore) -> None:
        roles = {"docs": Role.EDITOR, ALL: Role.READER, "运维": Role.ADMIN}
        user, token = store.create_user("ann", roles, ["sre", "oncall"])
        assert user == User("ann", roles, frozenset({"sre", "oncall"}), created_at=user.created_at)
        assert user.active and user.created_at.endswith("+00:00") and token.startswith(PREFIX)
        assert store.user("ann") == user
        assert store.users() == [user]
        assert store.principal("ann") == Principal("ann", roles, frozenset({"sre", "oncall"}))

    def test_the_token_authenticates_its_user_only(self, store: AccessStore) -> None:
        _, ann_token = store.create_user("ann", READS, ["sre"])
        _, bob_token = store.create_user("bob", {ALL: Role.ADMIN})
        assert ann_token != bob_token
        ann, bob = store.authenticate(ann_token), store.authenticate(bob_token)
        assert ann == Principal("ann", READS, frozenset({"sre"})) and not ann.everything
        assert bob is not None and bob.name == "bob" and bob.can("anything", Role.ADMIN)
        assert store.authenticate(ann_token + "x") is None and store.authenticate(ann_token[:-1]) is None

    def test_a_user_without_roles_or_groups(self, store: AccessStore) -> None:
        user, token = store.create_user("carol", {})
        assert user.roles == {} and user.groups == frozenset()
        principal = store.authenticate(token)
        assert principal is not None and principal.readable(["docs"]) == []

    def test_users_are_listed_by_name(self, store: AccessStore) -> None:
        for name in ("dave", "Bob", "ann", "carl.x@corp"):
            store.create_user(name, READS)
        assert [u.name for u in store.users()] == sorted(["dave", "Bob", "ann", "carl.x@corp"])

    def test_a_duplicate_user_is_refused_and_the_first_kept(self, store: AccessStore) -> None:
        first, token = store.create_user("ann", READS)
        with pytest.raises(AccessError, match="A user 'ann' exists already"):
            store.create_user("ann", {ALL: Role.ADMIN})
        assert store.user("ann") == first and store.authenticate(token) == first.principal()

    def test_names_are_checked(self, store: AccessStore) -> None:
        for bad in ("", "-ann", "ann smith", "a" * 65, "ann/x", "ann;drop"):
            with pytest.raises(AccessError, match="A user name is 1-64"):
                store.create_user(bad, READS)
        with pytest.raises(AccessError, match="A group name is 1-64"):
            store.create_user("ann", READS, ["ok", "not ok"])
        assert store.users(include_revoked=True) == []
        store.create_user("ann", READS)
        with pytest.raises(AccessError, match="A group name is 1-64"):
            store.set_user("ann", groups=["bad group"])
        assert store.user("ann").groups == frozenset()

    def test_unknown_users_are_refused(self, store: AccessStore) -> None:
        for call in (lambda: store.new_token("ghost"), lambda: store.revoke("ghost"),
                     lambda: store.set_user("ghost", roles=READS)):
            with pytest.raises(AccessError, match="No user 'ghost' \\(`users list` shows them\\)."):
                call()
        assert store.users(include_revoked=True) == []

    def test_a_new_token_replaces_the_old_one_at_once(self, store: AccessStore) -> None:
        _, old = store.create_user("ann", READS)
        new = store.new_token("ann")
        assert new != old and new.startswith(PREFIX)
        assert store.authenticate(old) is None
        assert store.authenticate(new) == Principal("ann", READS)
        newer = store.new_token("ann")
        assert store.authenticate(new) is None and store.authenticate(newer) is not None

    def test_revoke_takes_effect_at_once(self, store: AccessStore) -> None:
        _, token = store.create_user("ann", READS)
        _, other = store.create_user("bob", READS)
        assert store.authenticate(token) is not None
        revoked = store.revoke("ann")
        assert not revoked.active and revoked.revoked_at and revoked.revoked_at >= revoked.created_at
        assert store.authenticate(token) is None and store.principal("ann") is None
        assert store.authenticate(other) is not None
        assert [u.name for u in store.users()] == ["bob"]
        assert [u.name for u in store.users(include_revoked=True)] == ["ann", "bob"]
        assert store.user("ann") == revoked
        assert store.revoke("ann") == revoked  # again: nothing changes, the first time is kept
        assert store.authenticate(store.new_token("ann")) is None  # a revoked user's new token does not work either

    def test_set_user_changes_roles_and_replaces_groups(self, store: AccessStore) -> None:
        store.create_user("ann", {"docs": Role.READER, "ops": Role.EDITOR}, ["sre"])
        changed = store.set_user("ann", roles={"docs": Role.ADMIN, "ops": None, "hr": Role.READER})
        assert changed.roles == {"docs": Role.ADMIN, "hr": Role.READER} and changed.groups == frozenset({"sre"})
        assert store.user("ann") == changed
        regrouped = store.set_user("ann", groups=["dba", "oncall"])
        assert regrouped.groups == frozenset({"dba", "oncall"}) and regrouped.roles == changed.roles
        assert store.set_user("ann", groups=[]).groups == frozenset()
        assert store.set_user("ann", roles={"nothing-held": None}).roles == changed.roles
        assert store.user("ann") == User("ann", changed.roles, frozenset(), created_at=changed.created_at)
        assert store.principal("ann") == Principal("ann", changed.roles)

    def test_a_role_change_reaches_an_existing_token_at_once(self, store: AccessStore) -> None:
        _, token = store.create_user("ann", READS)
        store.set_user("ann", roles={"docs": Role.EDITOR}, groups=["sre"])
        assert store.authenticate(token) == Principal("ann", {"docs": Role.EDITOR}, frozenset({"sre"}))

    def test_tokens_are_never_kept_in_clear(self, store: AccessStore, stored: Callable[[], str]) -> None:
        _, first = store.create_user("ann", READS)
        second = store.new_token("ann")
        _, third = store.create_user("bob", READS)
        kept = stored()
        assert "ann" in kept and token_hash(third) in kept  # the reader does read the store
        for token in (first, second, third):
            assert token not in kept and token[len(PREFIX):] not in kept

    def test_concurrent_creates_of_one_name_make_one_user(self, store: AccessStore) -> None:
        results: list[str] = []
        barrier = threading.Barrier(4)

        def create() -> None:
            barrier.wait()
            try:
                store.create_user("ann", READS)
                results.append("created")
            except AccessError:
                results.append("refused")

        threads = [threading.Thread(target=create) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert sorted(results) == ["created", "refused", "refused", "refused"]
        assert [u.name for u in store.users()] == ["ann"]

    # -- the audit log

    def test_record_sets_the_time_and_keeps_the_event(self, store: AccessStore) -> None:
        kept = store.record(AuditEvent("ann", "documents.upload", "docs", "runbook.md", {"chunks": 3, "名": "值"}))
        assert kept.at and kept.at.endswith("+00:00")
        assert store.audit() == [kept]
        given = store.record(AuditEvent("bob", "users.create", "", "carol", {}, at="2026-01-01T00:00:00.000000+00:00"))
        assert given.at == "2026-01-01T00:00:00.000000+00:00"
        assert store.audit() == [given, kept]  # newest first: the order recorded, whatever the times say
        assert kept.to_dict()["detail"] == {"chunks": 3, "名": "值"}

    def test_audit_keeps_nested_details(self, store: AccessStore) -> None:
        detail = {"roles": {"docs": "editor"}, "groups": ["a", "b"], "n": 1.5, "ok": True, "none": None}
        store.record(AuditEvent("ann", "users.set", "", "bob", detail))
        assert dict(store.audit()[0].detail) == detail

    def test_audit_filters_newest_first(self, store: AccessStore) -> None:
        events = [AuditEvent("ann", "documents.upload", "docs", "a.md"),
                  AuditEvent("bob", "documents.delete", "docs", "a.md"),
                  AuditEvent("ann", "chunks.edit", "ops", "k1"),
                  AuditEvent("ann", "documents.upload", "ops", "b.md"),
                  AuditEvent("carol", "documentsXupload", "ops", "c.md"),
                  AuditEvent("bob", "feedback.rate", "docs", "t1")]
        kept = [store.record(e) for e in events]
        newest = list(reversed(kept))
        assert store.audit() == newest
        assert store.audit(limit=2) == newest[:2]
        assert store.audit(user="ann") == [e for e in newest if e.user == "ann"]
        assert store.audit(kb="docs") == [e for e in newest if e.kb == "docs"]
        assert [e.target for e in store.audit(action="documents.")] == ["b.md", "a.md", "a.md"]  # a prefix, "." kept
        assert [e.target for e in store.audit(action="documents.upload")] == ["b.md", "a.md"]
        assert store.audit(action="documents%") == [] and store.audit(action="documents_") == []  # no wildcards
        assert store.audit(user="ann", kb="ops", action="documents.") == [newest[2]]
        assert store.audit(user="nobody") == [] and store.audit(kb="nowhere") == []
        assert store.audit(limit=0) == []
