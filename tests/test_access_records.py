"""Roles, principals and scopes (rag_core/access/records.py)."""

from __future__ import annotations

import pytest

from rag_core.access.records import ALL, EVERYONE, UNRESTRICTED, AccessScope, Principal, Role, User, parse_roles
from rag_core.errors import AccessError


def test_roles_are_ordered_and_a_higher_one_covers_the_lower() -> None:
    assert [r.value for r in sorted(Role, key=lambda r: r.rank)] == ["reader", "editor", "admin"]
    assert Role.ADMIN.covers(Role.EDITOR) and Role.EDITOR.covers(Role.READER)
    assert not Role.READER.covers(Role.EDITOR)
    assert Role.parse(" Editor ") is Role.EDITOR
    with pytest.raises(AccessError, match="Unknown role 'owner'; roles: reader, editor, admin"):
        Role.parse("owner")


def test_a_principal_holds_the_higher_of_its_own_and_the_every_knowledge_base_role() -> None:
    ann = Principal("ann", {"docs": Role.EDITOR, ALL: Role.READER}, frozenset({"sre"}))
    assert ann.role_in("docs") is Role.EDITOR and ann.role_in("other") is Role.READER
    assert ann.can("docs", Role.EDITOR) and not ann.can("other", Role.EDITOR)
    bob = Principal("bob", {"docs": Role.READER, ALL: Role.ADMIN})
    assert bob.role_in("docs") is Role.ADMIN
    assert Principal("eve", {"docs": Role.READER}).readable(["hr", "docs", "ops"]) == ["docs"]


def test_scopes_restrict_to_the_groups_and_reveal_only_to_an_admin_of_the_knowledge_base() -> None:
    ann = Principal("ann", {"docs": Role.ADMIN, "ops": Role.READER}, frozenset({"sre"}))
    assert ann.scope("docs") == AccessScope(frozenset({"sre"}), reveal=True)
    assert ann.scope("ops") == AccessScope(frozenset({"sre"}), reveal=False)
    assert not ann.scope("ops").unrestricted
    assert EVERYONE.scope("anything") is UNRESTRICTED and UNRESTRICTED.unrestricted
    assert EVERYONE.can("anything", Role.ADMIN)


def test_roles_are_parsed_from_kb_equals_role() -> None:
    assert parse_roles(["docs=reader", "*=admin"]) == {"docs": Role.READER, ALL: Role.ADMIN}
    for bad in ("docs", "=reader", "docs="):
        with pytest.raises(AccessError, match="A role is KB=ROLE"):
            parse_roles([bad])


def test_a_users_record_shows_no_token_and_says_whether_it_is_active() -> None:
    user = User("ann", {"docs": Role.READER}, frozenset({"b", "a"}), created_at="t0")
    assert user.to_dict() == {"name": "ann", "roles": {"docs": "reader"}, "groups": ["a", "b"], "created_at": "t0",
                              "revoked_at": None, "active": True}
    assert user.principal() == Principal("ann", {"docs": Role.READER}, frozenset({"a", "b"}))
