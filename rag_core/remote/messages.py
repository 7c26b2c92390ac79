"""One message per kind of failure, for every remote client: what failed, where, what to do.

A message names the endpoint (`Endpoint.subject`, URL without credentials), says what happened in the
person's terms, and names the setting or variable to check. It never contains a key (the server's words
are shown with secrets blanked) and is always one line.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import RemoteError
from .failures import MODEL_NOT_FOUND_CODES, Failure


@dataclass(frozen=True)
class Endpoint:
    """Who is being called, as messages name it.

    subject: starts each message, e.g. "The embedding service at http://127.0.0.1:8000/v1".
    settings: the settings prefix named in advice ("embedding" -> embedding.timeout, embedding.base-url).
    path: the API route, for "has no ... endpoint" ("embeddings", "chat-completions", "rerank").
    """

    subject: str
    settings: str
    error: type[RemoteError] = RemoteError
    path: str = ""
    model: str = ""
    key_env: str = ""  # the variable holding the key, named in auth messages ("" = the service takes none)
    has_key: bool = False
    url_hint: str = ""  # after "Check <settings>.base-url", e.g. " (it usually ends in /v1)"
    url_setting: str = ""  # default "<settings>.base-url"
    connection_hint: str = ""  # after the connection advice, e.g. " or switch to offline mode (...)"
    bad_request_hint: str = ""  # after a refused request, e.g. " Check embedding.model and embedding.dimension."
    auth_hint: str = ""

    @property
    def url_key(self) -> str:
        return self.url_setting or f"{self.settings}.base-url"


def attempts(n: int) -> str:
    return f"{n} attempt{'s' if n != 1 else ''}"


def explain(failure: Failure, endpoint: Endpoint, tries: int, timeout: float) -> RemoteError:
    """The error for the person after `tries` attempts ended in `failure` (already redacted)."""
    s, p, f = endpoint.subject, endpoint.settings, failure
    status = f"HTTP {f.status}" if f.status is not None else ""
    detail = f": {f.detail}" if f.detail else ""
    if f.kind == "timeout":
        if f.phase == "idle":
            text = f"{s} stopped sending its answer (nothing for {timeout:g} s). Try again."
        elif f.phase == "total":
            text = (
                f"{s} did not finish its answer before the deadline ({p}.deadline). Try again, or raise {p}.deadline."
            )
        else:
            text = (f"{s} did not answer within {timeout:g} s ({attempts(tries)}). Try again, or raise "
                    f"{p}.timeout.")
    elif f.kind == "connection":
        text = f"{s} did not answer ({f.detail or 'could not connect'}). Check {endpoint.url_key}" \
               f"{endpoint.connection_hint}."
    elif f.kind == "auth":
        if endpoint.key_env and not endpoint.has_key:
            text = f"{s} needs an API key ({status}): set {endpoint.key_env}."
        elif endpoint.key_env:
            # Not the server's words here: some quote part of the key back ("sk-***c3b").
            text = f"{s} rejected the API key ({status}). Check {endpoint.key_env}{endpoint.auth_hint}."
        else:
            text = f"{s} refused access ({status}{detail}). Check the credentials it needs."
    elif f.kind == "not_found":
        if endpoint.model and (f.code in MODEL_NOT_FOUND_CODES or endpoint.model in f.detail):
            text = f"{s} has no model '{endpoint.model}' ({status}). Check {p}.model."
        else:
            text = (f"{s} has no {endpoint.path or 'such'} endpoint ({status}). Check {endpoint.url_key}"
                    f"{endpoint.url_hint}.")
    elif f.kind == "rate_limit":
        text = f"{s} is rate limiting requests ({status}), still after {attempts(tries)}. Wait a minute and try again."
    elif f.kind == "server":
        text = f"{s} kept failing ({status}) after {attempts(tries)}. Try again later."
    elif f.kind == "bad_request":
        text = f"{s} refused the request ({status or 'error'}{detail}).{endpoint.bad_request_hint}"
    elif f.kind == "malformed":
        text = f"{s} {f.detail}. Check {endpoint.url_key}{endpoint.url_hint}."
    elif f.kind == "stream_error":
        text = f"{s} reported an error during the answer{detail}. Try again."
    else:  # pragma: no cover - every kind is handled above
        text = f"{s} failed ({f.summary()})."
    return endpoint.error(" ".join(text.split()), f.kind)
