"""`python -m rag_core users create|list|set|revoke|token`: the people of a shared server, their role per knowledge
base (reader < editor < admin; `*` = every knowledge base) and their access groups.

    python -m rag_core users create ana --role biz=editor --role runbooks=reader --group sre
    python -m rag_core users set ana --role '*=reader' --remove-role runbooks --groups sre,oncall
    python -m rag_core users token ana        # a new token; the old one stops working at once
    python -m rag_core users revoke ana       # their token stops working at once
    python -m rag_core users list --all --json

A token is printed once, when it is made (`create`, `token`), and kept only as a hash: keep it then. Roles name
knowledge bases that exist (`kb list`) or `*`. Every change is recorded in the audit log (`audit list`).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..access.audit import audited
from ..access.names import check_name
from ..access.records import ALL, Role, User, parse_roles
from ..config import Settings
from ..errors import AccessError
from .audit import access_store, warn, who
from .output import format_table, print_json

if TYPE_CHECKING:
    from ..ports import AccessStore


def known_kbs(settings: Settings) -> list[str]:
    """The knowledge bases a role may name: those of the catalog, and the default one (made on first use)."""
    from ..bootstrap import open_catalog

    catalog = open_catalog(settings)
    try:
        names = {kb.name for kb in catalog.list_knowledge_bases()}
    finally:
        catalog.close()
    return sorted(names | {settings["milvus.collection"]})


def checked_roles(items: Sequence[str], settings: Settings) -> dict[str, Role]:
    """`--role KB=ROLE` items as roles, each KB one that exists or `*` (AccessError naming the known ones)."""
    roles = parse_roles(items)
    named = [kb for kb in roles if kb != ALL]
    if named:
        known = known_kbs(settings)
        unknown = [kb for kb in named if kb not in known]
        if unknown:
            raise AccessError(f"No knowledge base {', '.join(map(repr, unknown))}: a role names one of "
                              f"{', '.join(known)}, or * for every one (`kb list` shows them).")
    return roles


def groups_of(args: argparse.Namespace) -> list[str] | None:
    """The groups given (`--groups G,H` or `--group G ...`: the user's groups from now on), None when neither."""
    if args.groups is not None:
        return [g.strip() for g in args.groups.split(",") if g.strip()]
    return args.group


def show_roles(roles: Mapping[str, Role | str]) -> str:
    return ", ".join(f"{kb}={r.value if isinstance(r, Role) else r}" for kb, r in sorted(roles.items())) or "-"


def _print_token(user: User, token: str, json: bool) -> None:
    if json:
        print_json({"user": user.to_dict(), "token": token})
        return
    print(f"token: {token}")
    print(f"This token is shown only now: give it to {user.name} (sent as `Authorization: Bearer <token>`); "
          f"`users token {user.name}` replaces a lost one.")


def cmd_create(args: argparse.Namespace, settings: Settings) -> int:
    if not args.role:
        raise AccessError("users create: give at least one --role KB=ROLE (as --role biz=reader, or --role '*=admin' "
                          "for every knowledge base).")
    check_name(args.name)  # before the catalog is opened
    groups = [check_name(g, "group") for g in groups_of(args) or []]
    roles = checked_roles(args.role, settings)
    with access_store(settings) as store:
        user, token = store.create_user(args.name, roles, groups)
        audited(store, who(), "users.create", target=user.name,
                detail={"roles": {kb: r.value for kb, r in sorted(roles.items())}, "groups": sorted(user.groups)},
                warn=warn)
    if not args.json:
        print(f"created {user.name}  roles: {show_roles(user.roles)}  groups: {', '.join(sorted(user.groups)) or '-'}")
    _print_token(user, token, args.json)
    return 0


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    with access_store(settings) as store:
        users = store.users(include_revoked=args.all)
        revoked = 0 if users or args.all else len(store.users(include_revoked=True))
    if args.json:
        print_json([u.to_dict() for u in users])
        return 0
    if revoked:
        print(f"no active users ({revoked} revoked: `users list --all` shows them)")
        return 0
    if not users:
        print("no users: the workbench is a one-person tool (RAG_API_TOKEN, if set, is an admin of everything); "
              "`users create NAME --role KB=ROLE` adds one")
        return 0
    rows: list[dict[str, Any]] = [
        {"name": u.name, "roles": show_roles(u.roles), "groups": ", ".join(sorted(u.groups)) or None,
         "created": u.created_at[:19].replace("T", " ") or None,
         "revoked": (u.revoked_at or "")[:19].replace("T", " ") or None} for u in users]
    print(format_table(rows, ["name", "roles", "groups", "created", *(["revoked"] if args.all else [])]))
    return 0


def _existing(store: AccessStore, name: str) -> User:
    user = store.user(name)
    if user is None:
        raise AccessError(f"No user {name!r} (`users list --all` shows them).")
    return user


def cmd_set(args: argparse.Namespace, settings: Settings) -> int:
    groups = groups_of(args)
    removed = list(dict.fromkeys(kb.strip() for kb in args.remove_role or ()))
    if not args.role and not removed and groups is None:
        raise AccessError("users set: give what changes: --role KB=ROLE, --remove-role KB, --groups G,H or --group G.")
    roles = checked_roles(args.role or [], settings)
    if both := sorted(set(roles) & set(removed)):
        raise AccessError(f"users set: {', '.join(both)} is both given a role and removed; give one of them.")
    with access_store(settings) as store:
        before = _existing(store, args.name)
        if missing := [kb for kb in removed if kb not in before.roles]:
            raise AccessError(f"{args.name} holds no role on {', '.join(map(repr, missing))} to remove (their "
                              f"roles: {show_roles(before.roles)}).")
        changes: dict[str, Role | None] = {**roles, **dict.fromkeys(removed)}
        user = store.set_user(args.name, roles=changes, groups=groups)
        detail: dict[str, object] = {}
        if roles:
            detail["roles"] = {kb: r.value for kb, r in sorted(roles.items())}
        if removed:
            detail["removed"] = removed
        if groups is not None:
            detail["groups"] = sorted(user.groups)
        audited(store, who(), "users.set", target=user.name, detail=detail, warn=warn)
    if args.json:
        print_json(user.to_dict())
    else:
        print(f"updated {user.name}  roles: {show_roles(user.roles)}  groups: {', '.join(sorted(user.groups)) or '-'}")
    return 0


def cmd_revoke(args: argparse.Namespace, settings: Settings) -> int:
    with access_store(settings) as store:
        before = _existing(store, args.name)
        user = store.revoke(args.name)
        if before.active:
            audited(store, who(), "users.revoke", target=user.name, warn=warn)
    if args.json:
        print_json(user.to_dict())
    elif before.active:
        print(f"revoked {user.name}: their token stops working now")
    else:
        print(f"{user.name} was revoked already ({before.revoked_at})")
    return 0


def cmd_token(args: argparse.Namespace, settings: Settings) -> int:
    with access_store(settings) as store:
        user = _existing(store, args.name)
        if not user.active:
            raise AccessError(f"{user.name} was revoked ({user.revoked_at}): a new token would not work; create a "
                              "user under a new name instead.")
        token = store.new_token(args.name)
        audited(store, who(), "users.token", target=user.name, warn=warn)  # never the token itself
    if not args.json:
        print(f"new token for {user.name}; the old one stops working now")
    _print_token(user, token, args.json)
    return 0


def _group_options(p: argparse.ArgumentParser, verb: str) -> None:
    given = p.add_mutually_exclusive_group()
    given.add_argument("--groups", metavar="G,H", help=f"the access groups {verb}, comma-separated (\"\": none); a "
                       "document tagged access=G is retrieved only for its groups' members")
    given.add_argument("--group", action="append", metavar="G", help="an access group (repeatable), as --groups")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("users", help="people with their own tokens, a role per knowledge base and access groups",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = p.add_subparsers(dest="users_command", required=True, metavar="ACTION")
    json_help = "print machine-readable JSON on stdout"
    role_help = "a role on a knowledge base: reader, editor or admin (KB * = every one; repeatable)"

    c = actions.add_parser("create", help="a new user; their token is printed once")
    c.add_argument("name", help="1-64 letters, digits, '.', '_', '@' or '-'")
    c.add_argument("--role", action="append", metavar="KB=ROLE", help=role_help)
    _group_options(c, "they belong to")
    c.add_argument("--json", action="store_true", help='print {"user": ..., "token": ...} as JSON')
    c.set_defaults(func=cmd_create)

    ls = actions.add_parser("list", help="the users, their roles and groups")
    ls.add_argument("--all", action="store_true", help="revoked users too")
    ls.add_argument("--json", action="store_true", help=json_help)
    ls.set_defaults(func=cmd_list)

    s = actions.add_parser("set", help="change a user's roles or groups")
    s.add_argument("name", help="the user")
    s.add_argument("--role", action="append", metavar="KB=ROLE", help=role_help + "; replaces their role there")
    s.add_argument("--remove-role", action="append", metavar="KB", help="take away their role on KB (repeatable)")
    _group_options(s, "they belong to from now on (replacing the others)")
    s.add_argument("--json", action="store_true", help="print the user as JSON")
    s.set_defaults(func=cmd_set)

    r = actions.add_parser("revoke", help="a user's token stops working at once (they stay in the audit log)")
    r.add_argument("name", help="the user")
    r.add_argument("--json", action="store_true", help="print the user as JSON")
    r.set_defaults(func=cmd_revoke)

    t = actions.add_parser("token", help="a new token for a user (printed once); the old one stops working")
    t.add_argument("name", help="the user")
    t.add_argument("--json", action="store_true", help='print {"user": ..., "token": ...} as JSON')
    t.set_defaults(func=cmd_token)
