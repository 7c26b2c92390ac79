"""Who is using the app, and what they may see and do (issue 37).

On loopback (`--server.address 127.0.0.1`, `make run`'s default) with `auth.required = false` the app is one
person's tool: no sign-in, the principal is EVERYONE (an admin of every knowledge base who sees every document).
Served to others (Streamlit bound to any other address, or none, which binds every interface) or with
`auth.required = true`, every browser session signs in once before any page:

* with a token: a user's own (`python -m rag_core users create`), checked by the access store
  (`bootstrap.build_access_store`), or the server's RAG_API_TOKEN (EVERYONE, as for the HTTP API);
* through a single sign-on proxy: the proxy names the user in `auth.user-header`, trusted only when the
  connection comes from an address in `auth.trusted-proxies` (anyone else could send the header).

The session keeps the Principal (never the token) and re-reads the user on every run, so a revoked user or a
changed role takes effect at once. Pages ask `allowed(kb, role)` (or `gate`, which also says why not) instead of
looking at roles themselves; `current_principal()` is the one place that decides who is asking.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
from collections.abc import Iterable, Mapping

import streamlit as st

from rag_core import bootstrap
from rag_core.access.records import ALL, EVERYONE, AuditEvent, Principal, Role
from rag_core.config import Settings, load_settings
from rag_core.errors import RagError
from rag_core.ports import AccessStore

from .errors import show_error
from .i18n import N_, t

PRINCIPAL = "access.principal"  # session state: the signed-in Principal (never the token)
VIA = "access.via"  # session state: how they signed in: "token", "api-token" (RAG_API_TOKEN) or "proxy"
NOTICE = "access.notice"  # session state: a line for the sign-in screen (signed out, revoked)
TOKEN_ENV = "RAG_API_TOKEN"
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
ROLE_NAMES = {Role.READER: N_("reader"), Role.EDITOR: N_("editor"), Role.ADMIN: N_("admin")}


# ------------------------------------------------------------------------------------------ where the app is served
def is_loopback(address: str | None) -> bool:
    """True for a loopback address or name; an empty address is not (Streamlit then binds every interface)."""
    host = (address or "").strip().strip("[]").lower()
    if not host:
        return False
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def server_address() -> str | None:
    """The address Streamlit is bound to (`--server.address`, `.streamlit/config.toml`)."""
    value = st.get_option("server.address")
    return str(value) if value else None


def sign_in_needed(settings: Settings) -> bool:
    """Whether people sign in: `auth.required`, or the app served to others (not bound to loopback)."""
    return bool(settings["auth.required"]) or not is_loopback(server_address())


# ------------------------------------------------------------------------------------------ the access store
def _close(store: AccessStore) -> None:
    store.close()


@st.cache_resource(show_spinner=False, on_release=_close)
def _store(key: tuple[str, str]) -> AccessStore:
    # `key` is the data folder and a digest of database.url (the URL, with its password, is not part of the key).
    return bootstrap.build_access_store(load_settings(data_dir=key[0]))


def access_store(settings: Settings | None = None) -> AccessStore:
    """The users, roles and groups of this data folder or database (one store per process, shared by sessions)."""
    settings = settings or load_settings()
    digest = hashlib.sha256(str(settings["database.url"]).encode()).hexdigest()
    return _store((str(settings.data_dir.resolve()), digest))


def clear_access_store() -> None:
    """Close and forget the cached store (tests; a changed database.url)."""
    _store.clear()


# ------------------------------------------------------------------------------------------ the trusted proxy
def trusted(peer: str | None, proxies: str) -> bool:
    """Whether the connection's peer is one of `auth.trusted-proxies` (addresses or networks, comma-separated).
    Streamlit reports a loopback peer as no address (`st.context.ip_address` is None for 127.0.0.1 and ::1), so
    None stands for loopback here: trusted only when a loopback address is listed."""
    entries = [p.strip() for p in proxies.split(",") if p.strip()]
    if not entries:
        return False
    try:
        address = ipaddress.ip_address(peer.strip().strip("[]")) if peer else None
    except ValueError:
        return False
    for entry in entries:
        if entry.lower() in LOOPBACK_NAMES:
            entry = "127.0.0.1"
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            continue  # not an address: never matches
        if address is None and network.network_address.is_loopback:
            return True
        if address is not None and address.version == network.version and address in network:
            return True
    return False


def proxy_user(settings: Settings, headers: Mapping[str, str], peer: str | None) -> str | None:
    """The user a trusted proxy names in `auth.user-header`, or None (no header, or not from a trusted proxy)."""
    if not trusted(peer, settings["auth.trusted-proxies"]):
        return None
    name = headers.get(settings["auth.user-header"]) or ""
    return name.strip() or None


def _request() -> tuple[Mapping[str, str], str | None]:
    """The browser session's first request's headers and the connection's peer address (None: loopback, as
    Streamlit reports it; anything but a string, as under AppTest, is an unknown peer, never trusted)."""
    peer = st.context.ip_address
    return dict(st.context.headers), peer if peer is None or isinstance(peer, str) else "unknown"


# ------------------------------------------------------------------------------------------ who is asking
def check_token(token: str, store: AccessStore, env: Mapping[str, str] | None = None) -> Principal | None:
    """The principal of `token`: a user's (active) token, or the server's RAG_API_TOKEN (EVERYONE); else None."""
    token = token.strip()
    if not token:
        return None
    api_token = (os.environ if env is None else env).get(TOKEN_ENV, "")
    if api_token and hmac.compare_digest(token.encode(), api_token.encode()):
        return EVERYONE
    return store.authenticate(token)


def signed_in(check: bool = False) -> Principal | None:
    """This session's principal if it has signed in. `check`: read the user again from the store (a revoked user
    is signed out, a changed role applies), as the first call of every run does (app.py's and each page's), so
    the many `allowed` calls of a run ask the store nothing."""
    principal: Principal | None = st.session_state.get(PRINCIPAL)
    if principal is None or principal.everything or not check:
        return principal
    try:
        fresh = access_store().principal(principal.name)
    except RagError as exc:  # who they are cannot be checked now: signed out rather than trusted unchecked
        sign_out(t("Your sign-in cannot be checked now ({error}); sign in again.", error=exc))
        return None
    if fresh is None:
        sign_out(t("Your access has been revoked; sign in again with a new token."))
        return None
    st.session_state[PRINCIPAL] = fresh
    return fresh


def sign_out(notice: str | None = None) -> None:
    for key in (PRINCIPAL, VIA):
        st.session_state.pop(key, None)
    if notice:
        st.session_state[NOTICE] = notice


def identify(check: bool = False) -> Principal | None:
    """Who is using the app, without asking: EVERYONE on loopback without `auth.required`, the session's
    signed-in user, or the user a trusted proxy names; None when they still have to sign in. Outside a Streamlit
    run (a script, a unit test calling ui.state) nobody is being served: EVERYONE. `check`: see `signed_in`."""
    if not st.runtime.exists():
        return EVERYONE
    try:
        settings = load_settings()
    except RagError as exc:  # a bad rag.toml: auth.required cannot be read, so only loopback goes on (as before)
        if is_loopback(server_address()):
            return EVERYONE
        show_error(exc)
        st.stop()
        raise
    if not sign_in_needed(settings):
        return EVERYONE
    if (principal := signed_in(check)) is not None:
        return principal
    headers, peer = _request()
    if (name := proxy_user(settings, headers, peer)) is not None:
        found = access_store(settings).principal(name)
        if found is not None:
            st.session_state[PRINCIPAL], st.session_state[VIA] = found, "proxy"
            return found
        st.session_state[NOTICE] = t("Your single sign-on names user **{name}**, who has no active account here: "
                                     "ask an admin to create it (`python -m rag_core users create {name}`).",
                                     name=name)
    return None


def current_principal(check: bool = True) -> Principal:
    """Who is using the app in this browser session (`identify`). Not signed in yet: the sign-in screen is drawn
    and the script stops here, so nothing after it (a page, the sidebar's lists) runs for an unknown person.
    `check` (a page's first call): the user is read again from the store; the helpers below, called many times a
    run, take the principal that call left in the session."""
    if (principal := identify(check)) is not None:
        return principal
    sign_in_screen(load_settings())
    st.stop()
    raise AssertionError("unreachable: st.stop() raises")


def sign_in_screen(settings: Settings) -> None:
    """The sign-in form: a token (a password field, cleared on submit, never kept), one clear line when wrong."""
    st.title(t("🔐 Sign in"))
    st.caption(t("This workbench is shared: sign in with your own token (an admin creates it with "
                 "`python -m rag_core users create NAME --role KB=ROLE`)."))
    if notice := st.session_state.pop(NOTICE, None):
        st.warning(notice, icon="🔒")
    store = access_store(settings)
    if not os.environ.get(TOKEN_ENV) and not _has_users(store):
        st.info(t("No one can sign in yet: create a user with `python -m rag_core users create NAME --role '*=admin'` "
                  "(it prints their token), or set RAG_API_TOKEN for the server."), icon="ℹ️")
    with st.form("access.sign_in", clear_on_submit=True):
        # The form clears the field once submitted, so the token is not left in the session (its key is for tests).
        token = st.text_input(t("Token"), type="password", placeholder="rwb_…",  # i18n: ok (the token's prefix)
                              key="access.token", help=t("Kept only for this check: the app remembers who you are, "
                                                         "not the token."))
        submitted = st.form_submit_button(t("Sign in"), type="primary", key="access.submit")
    if submitted:
        try:
            principal = check_token(token, store)
        except RagError as exc:  # the store cannot be read: not the token's fault
            show_error(exc)
            return
        if principal is None:
            st.error(t("That token is not valid (mistyped, replaced or revoked): check it, or ask an admin for a new "
                       "one."), icon="🛑")
            return
        st.session_state[PRINCIPAL] = principal
        st.session_state[VIA] = "api-token" if principal.everything else "token"
        st.rerun()


def _has_users(store: AccessStore) -> bool:
    try:
        return bool(store.users())
    except RagError:
        return True  # unknown: say nothing rather than something wrong


def who_box() -> None:
    """The sidebar's line saying who is signed in, with a sign-out button (only where people sign in)."""
    if not sign_in_needed(load_settings()):
        return
    principal = signed_in()
    if principal is None:
        return
    name = t("everyone (RAG_API_TOKEN)") if principal.everything else principal.name
    st.caption(t("Signed in as **{name}**", name=name))
    if st.session_state.get(VIA) == "proxy":
        return  # signed in by the proxy: signing out here would sign them straight back in
    if st.button(t("Sign out"), key="access.sign_out", icon="🚪"):
        sign_out(t("Signed out."))
        st.rerun()


# ------------------------------------------------------------------------------------------ what they may do
def who() -> str:
    """The signed-in person's name, which chunk edits and the audit log record ("local" in the one-person setup)."""
    return current_principal(check=False).name


def role_name(role: Role) -> str:
    return t(ROLE_NAMES[role])


def allowed(kb: str, role: Role) -> bool:
    """Whether this session's person holds `role` (or a higher one) on knowledge base `kb` (ALL: every one)."""
    return current_principal(check=False).can(kb, role)


def refusal(kb: str, role: Role) -> str:
    """Why a widget is disabled or hidden: "Needs the editor role on 'docs'." (in the session's language)."""
    if kb == ALL:
        return t("Needs the {role} role on every knowledge base.", role=role_name(role))
    return t("Needs the {role} role on '{kb}'.", role=role_name(role), kb=kb)


def gate(kb: str, role: Role) -> bool:
    """`allowed(kb, role)`; when not, a short caption saying which role it needs (for a section left out)."""
    if allowed(kb, role):
        return True
    st.caption(f"🔒 {refusal(kb, role)}")
    return False


def readable(names: Iterable[str]) -> list[str]:
    """The knowledge bases among `names` this person may read, in their order (the others are never named)."""
    return current_principal(check=False).readable(names)


def admin_anywhere() -> bool:
    """Whether this person is an admin of some knowledge base (or all): who is offered creating, copying and
    deleting knowledge bases, each action then checked on the ones it concerns."""
    principal = current_principal(check=False)
    return principal.everything or Role.ADMIN in principal.roles.values()


def record(action: str, kb: str = "", target: str = "", **detail: object) -> None:
    """Put what this person just did in the audit log (`audit list`): `action` as the HTTP API and the CLI name it
    (`documents.upload`, `chunks.edit`, `kbs.create`, ...). The thing is done by then: a log that cannot be written
    is said on the page, without undoing it."""
    try:
        access_store().record(AuditEvent(who(), action, kb, target, detail))
    except RagError as exc:
        st.warning(t("The audit log could not record this ({action}): {error}", action=action, error=exc), icon="⚠️")
