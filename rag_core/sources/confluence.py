"""The `confluence` source (issue 38): one Confluence space, read live through Confluence's REST API (v1, which
Confluence Data Center and Cloud both answer).

The location is the base URL (`https://example.atlassian.net/wiki`, `https://confluence.example.org`); options:
`space` (its key, required), `token-env` (the environment variable holding the token, default CONFLUENCE_TOKEN),
`user-env` (the one holding the user or e-mail: Basic auth user:token, as Cloud's API tokens want; without it a
Bearer token, as Data Center's personal access tokens), `attachments` (yes/no, default yes), `max-pages`. The token
is read from the environment when a sync lists or reads, and goes only into the Authorization header (httpx drops
it on a redirect to another host): never into a message, a URL, an item's meta or a log. A base URL holding
credentials is refused, and the two variables' names must start with CONFLUENCE_ (whoever adds a source picks the
URL the token is sent to: no other secret of the server may be sent there).

Listing asks for the space first (an unknown key is one line), then pages its current pages
(`/rest/api/content?spaceKey=..&type=page&status=current`, `_links.next`, else until a page of results is short),
at most `max-pages`. A page is an item named by its ancestors' titles as folders and its title, `.html` (named as
the `confluence-export`'s: `exports.title_segment`; of two pages one title under one parent, the later-created gets
its id), its version the page's version number, so an unchanged page is not even fetched; `read` fetches its body
(`body.export_view`: macros rendered) as an HTML document for the HTML loader. Each page's attachments of a type the
loaders read follow it, in its folder (`Parent/Page/diagram.pdf`), versioned by their own version numbers.

Read restrictions become `SourceItem.groups`: Confluence applies a page's and each ancestor's view restrictions all
at once, so the groups are those every restricted level allows (sorted); a page no group may read by that (one
restricted to named users only) is not listed, nor are its attachments. Attachments take their page's groups.

Errors: 401/403 names the variables to check; 429/503 are retried with web.py's policy (waiting what Retry-After
says, `sleep` injected); no answer in time, an answer that is not JSON, an unknown space stop the listing in one line
(nothing is deleted). A page deleted between the listing and its read (404) fails that item only.

httpx and rag_core/retry.py rather than atlassian-python-api (read at its newest commit): its Retry-After handling is
off unless `backoff_and_retry` is set, then waits up to 1800 s over up to 1000 retries inside `time.sleep` (or
urllib3's Retry), which a test cannot observe without waiting; and it brings requests and oauthlib for the two GETs
and a download used here. Its pagination (`_links.next`) is the few lines `_next` has.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

import httpx

from ..errors import SourceError
from ..loaders.formats import SUPPORTED_EXTENSIONS
from ..retry import Attempts, retry_after_from_headers
from .exports import title_segment
from .git import without_credentials
from .records import SourceItem
from .web import CONNECT_TIMEOUT, MAX_BYTES, READ_TIMEOUT, RETRY, RETRY_STATUS, USER_AGENT, transport_problem

DEFAULT_TOKEN_ENV = "CONFLUENCE_TOKEN"
DEFAULT_MAX_PAGES = 2000
PAGE_SIZE = 50  # results asked per request (Cloud may give fewer: `_links.next` says where the rest are)
# token-env and user-env name variables of this prefix only: whoever adds a source chooses the URL the token goes to,
# so a source must not be able to send another secret of the server (a model's API key) there.
ENV_PREFIX = "CONFLUENCE_"
_ENV_NAME = re.compile(rf"{ENV_PREFIX}[A-Za-z0-9_]+")
OPTIONS = ("space", "token-env", "user-env", "attachments", "max-pages")
_RESTRICTIONS = "restrictions.read.restrictions.group,restrictions.read.restrictions.user"
_EXPAND = f"version,ancestors,{_RESTRICTIONS}"


class _Answer(NamedTuple):
    url: str
    status: int
    headers: httpx.Headers
    body: bytes


@dataclass(frozen=True)
class _Page:
    id: str
    title: str
    version: str
    ancestors: tuple[tuple[str, str], ...]  # (id, title), the space's root first
    url: str
    author: str = ""
    when: str = ""
    restriction: frozenset[str] | None = None  # None: no read restriction; else the groups it allows


@dataclass
class ConfluenceReader:
    """Reads one Confluence space (see the module's docstring). `env`: where the token is read (os.environ);
    `sleep`: the wait between retries (a test's fake one); `timeout`: httpx's (web.py's by default)."""

    base: str
    space: str
    token_env: str = DEFAULT_TOKEN_ENV
    user_env: str = ""
    attachments: bool = True
    max_pages: int = DEFAULT_MAX_PAGES
    page_size: int = PAGE_SIZE
    env: Mapping[str, str] = field(default_factory=lambda: os.environ, repr=False)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    timeout: httpx.Timeout = field(default_factory=lambda: httpx.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT))

    def __post_init__(self) -> None:
        parts = urlsplit(self.base.strip())
        shown = urlunsplit((parts.scheme, parts.hostname or "", parts.path, "", ""))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SourceError(f"confluence source {shown or '(none)'}: not an http(s) URL; give Confluence's base "
                              "URL, as https://example.atlassian.net/wiki")
        if parts.username or parts.password:
            raise SourceError(f"confluence source {shown}: credentials in the URL; put the token in an environment "
                              f"variable and name it with --option token-env=NAME")
        self.base = self.base.strip().rstrip("/").removesuffix("/rest/api").rstrip("/")
        self.space = self.space.strip()
        if not self.space:
            raise SourceError(f"confluence source {self.base}: give the space's key with --option space=KEY")
        for option, name in (("token-env", self.token_env), ("user-env", self.user_env)):
            if name and not _ENV_NAME.fullmatch(name):
                raise SourceError(f"confluence source {self.base}: {option} must name an environment variable "
                                  f"starting with {ENV_PREFIX} (as {DEFAULT_TOKEN_ENV}), not {name!r}")
        if self.max_pages < 1 or self.page_size < 1:
            raise SourceError(f"confluence source {self.base}: max-pages must be 1 or more")
        self._restrictions: dict[str, frozenset[str] | None] = {}

    def describe(self) -> str:
        return f"confluence {self.base} space {self.space}"

    # ------------------------------------------------------------------------------------ listing
    def items(self) -> Iterator[SourceItem]:
        self._restrictions = {}
        with self._client() as client:
            self._check_space(client)
            pages = self._pages(client)
            by_id = {p.id: p for p in pages}
            folders: dict[str, str] = {}
            taken: set[str] = set()
            for page in sorted(pages, key=lambda p: (len(p.ancestors), _id_order(p.id))):
                groups = self._groups(client, page, by_id)
                if groups is None:
                    continue  # no group may read it: left out (and its children, whose levels include its own)
                parent = page.ancestors[-1][0] if page.ancestors else ""
                prefix = folders.get(parent) or "/".join(title_segment(t, a) for a, t in page.ancestors)
                folder = "/".join(filter(None, (prefix, title_segment(page.title, page.id))))
                if f"{folder}.html" in taken:
                    folder = f"{folder} ({page.id})"
                taken.add(f"{folder}.html")
                folders[page.id] = folder
                yield self._page_item(page, f"{folder}.html", groups)
                if self.attachments:
                    for item in self._attachment_items(client, page, folder, groups):
                        if item.path not in taken:
                            taken.add(item.path)
                            yield item

    def _check_space(self, client: httpx.Client) -> None:
        url = f"{self.base}/rest/api/space/{quote(self.space, safe='')}"
        answer = self._get(client, url)
        if answer.status == 404:
            raise SourceError(f"{self.describe()}: no such space (HTTP 404); check the key, and that the token's "
                              "user may see the space")
        self._json(answer)

    def _pages(self, client: httpx.Client) -> list[_Page]:
        query = {"spaceKey": self.space, "type": "page", "status": "current", "expand": _EXPAND,
                 "limit": self.page_size, "start": 0}
        url: str | None = f"{self.base}/rest/api/content?{urlencode(query)}"
        pages: list[_Page] = []
        asked: set[str] = set()
        while url and url not in asked and len(pages) < self.max_pages:
            asked.add(url)
            data = self._json(self._get(client, url))
            results = _results(data, url)
            web = str((data.get("_links") or {}).get("base") or self.base)
            for result in results[: self.max_pages - len(pages)]:
                pages.append(_page(result, web, url))
            url = self._next(url, data, len(results))
        return pages

    def _next(self, url: str, data: Mapping[str, Any], size: int) -> str | None:
        """The next page of results: `_links.next` (relative to the base URL, or absolute on its host); from a
        server answering without `_links`, the next `start` when this page was full; else None."""
        given = data.get("_links")
        links: Mapping[str, Any] = given if isinstance(given, dict) else {}
        link = links.get("next")
        if links and not link:
            return None  # Confluence's links, none to a next page: the last one
        if isinstance(link, str) and link:
            if link.startswith(("http://", "https://")):
                return link if _origin(link) == _origin(self.base) else None  # the token stays on its host
            context = urlsplit(self.base).path.rstrip("/")
            if context and link.startswith(context + "/"):
                link = link[len(context):]
            return self.base + "/" + link.lstrip("/")
        limit = _whole(data.get("limit"), self.page_size)
        if size == 0 or size < limit:
            return None
        parts = urlsplit(url)
        query = dict(pair.split("=", 1) for pair in parts.query.split("&") if "=" in pair)
        start = _whole(data.get("start"), _whole(query.get("start"), 0))
        query["start"] = str(start + size)
        return urlunsplit((*parts[:3], "&".join(f"{k}={v}" for k, v in query.items()), ""))

    def _groups(self, client: httpx.Client, page: _Page, by_id: Mapping[str, _Page]) -> tuple[str, ...] | None:
        """The groups that may read `page`: those every restricted level (its ancestors and itself) allows; () when
        none is restricted; None when no group may (a level allowing named users only, or levels with no group in
        common)."""
        levels = [by_id[a].restriction if a in by_id else self._restriction_of(client, a, page)
                  for a, _ in page.ancestors]
        restricted = [r for r in (*levels, page.restriction) if r is not None]
        if not restricted:
            return ()
        common = frozenset.intersection(*restricted)
        return tuple(sorted(common)) if common else None

    def _restriction_of(self, client: httpx.Client, page_id: str, child: _Page) -> frozenset[str] | None:
        """An ancestor's read restriction, when it is not among the pages listed (max-pages); asked once."""
        if page_id not in self._restrictions:
            url = f"{self.base}/rest/api/content/{quote(page_id, safe='')}?expand={_RESTRICTIONS}"
            answer = self._get(client, url)
            if answer.status != 200:
                raise SourceError(f"{url}: answered HTTP {answer.status} asking the restrictions of an ancestor of "
                                  f"'{child.title}'; its groups cannot be known")
            self._restrictions[page_id] = _restriction(self._json(answer), url)
        return self._restrictions[page_id]

    def _attachment_items(self, client: httpx.Client, page: _Page, folder: str,
                          groups: tuple[str, ...]) -> Iterator[SourceItem]:
        query = {"limit": self.page_size, "start": 0, "expand": "version"}
        url: str | None = f"{self.base}/rest/api/content/{quote(page.id, safe='')}/child/attachment?{urlencode(query)}"
        asked: set[str] = set()
        while url and url not in asked:
            asked.add(url)
            answer = self._get(client, url)
            if answer.status == 404:
                return  # the page went since it was listed: its own read says so
            data = self._json(answer)
            results = _results(data, url)
            web = str((data.get("_links") or {}).get("base") or self.base)
            for result in results:
                try:
                    name = str(result["title"])
                    version = result.get("version") or {}
                    links = result.get("_links") or {}
                    download = str(links["download"])
                except (KeyError, TypeError, AttributeError):
                    raise SourceError(f"{url}: an attachment without a title or download link; is "
                                      f"{self.base} Confluence's base URL?") from None
                if os.path.splitext(name)[1][1:].lower() not in SUPPORTED_EXTENSIONS:
                    continue
                path = f"{folder}/{title_segment(name, 'attachment')}"
                meta = {"title": page.title, "page_id": page.id, "attachment": name,
                        "attachment_id": str(result.get("id", "")), "version": str(version.get("number", "")),
                        "author": _author(version), "when": str(version.get("when") or "")}
                yield SourceItem(path, self._reader(self._download, path, download),
                                 version=meta["version"], url=web + (links.get("webui") or download),
                                 meta={k: v for k, v in meta.items() if v}, groups=groups)
            url = self._next(url, data, len(results))

    def _page_item(self, page: _Page, path: str, groups: tuple[str, ...]) -> SourceItem:
        meta = {"title": page.title, "page_id": page.id, "version": page.version, "author": page.author,
                "when": page.when}
        return SourceItem(path, self._reader(self._page_html, path, page), version=page.version, url=page.url,
                          meta={k: v for k, v in meta.items() if v}, groups=groups)

    # ------------------------------------------------------------------------------------ reading
    def _reader(self, fetch: Callable[[httpx.Client, str, Any], bytes], path: str, what: Any) -> Callable[[], bytes]:
        def read() -> bytes:
            with self._client() as client:
                return fetch(client, path, what)
        return read

    def _page_html(self, client: httpx.Client, path: str, page: _Page) -> bytes:
        """The page as an HTML document: its title, and its body as Confluence renders it for export (macros
        expanded); the storage format when that is all the server gives."""
        url = f"{self.base}/rest/api/content/{quote(page.id, safe='')}?expand=body.export_view,body.storage"
        answer = self._get(client, url, path)
        if answer.status in (404, 410):
            raise SourceError(f"{path}: page {page.id} is gone from Confluence (HTTP {answer.status}); the next "
                              "sync deletes its document")
        if answer.status != 200:
            raise SourceError(f"{path}: page {page.id} answered {_status(answer)}")
        try:
            data = self._json(answer)
            body = data.get("body") or {}
            content = (body.get("export_view") or {}).get("value") or (body.get("storage") or {}).get("value")
        except (SourceError, AttributeError) as e:
            raise SourceError(f"{path}: {e}") from None
        if not isinstance(content, str):
            raise SourceError(f"{path}: page {page.id} came without a body ({url})")
        title = html.escape(str(data.get("title") or page.title))
        return (f'<!doctype html><html><head><meta charset="utf-8"><title>{title}</title></head><body>'
                f'<h1 id="title-heading">{title}</h1><div id="main-content" class="wiki-content">{content}</div>'
                "</body></html>").encode()

    def _download(self, client: httpx.Client, path: str, link: str) -> bytes:
        url = link if link.startswith(("http://", "https://")) else f"{self.base}/{link.lstrip('/')}"
        if _origin(url) != _origin(self.base):
            raise SourceError(f"{path}: its download link is on another host ({_origin(url)}); not fetched")
        answer = self._get(client, url, path)
        if answer.status != 200:
            gone = " (deleted since it was listed)" if answer.status in (404, 410) else ""
            raise SourceError(f"{path}: the attachment answered {_status(answer)}{gone}")
        return answer.body

    # ------------------------------------------------------------------------------------ HTTP
    def _client(self) -> httpx.Client:
        """A client carrying the token from the environment (SourceError naming the variable when it is unset)."""
        token = (self.env.get(self.token_env) or "").strip()
        if not token:
            raise SourceError(f"{self.describe()}: no token in the environment variable {self.token_env}; set it "
                              "(a personal access token, or with user-env an API token)")
        if self.user_env:
            user = (self.env.get(self.user_env) or "").strip()
            if not user:
                raise SourceError(f"{self.describe()}: no user in the environment variable {self.user_env}; set it "
                                  "(the account's e-mail on Cloud)")
            authorization = "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode("ascii")
        else:
            authorization = f"Bearer {token}"
        return httpx.Client(timeout=self.timeout, follow_redirects=True,
                            headers={"User-Agent": USER_AGENT, "Accept": "application/json",
                                     "Authorization": authorization})

    def _get(self, client: httpx.Client, url: str, path: str = "") -> _Answer:
        """GET `url` (429/503 retried as web.py does); 401/403 raise SourceError naming the variables to check,
        no answer one naming `path` (the item) or else the URL."""
        attempts = Attempts(RETRY)
        while True:
            attempts.next_timeout()
            try:
                answer = _one_get(client, url)
            except httpx.HTTPError as e:
                raise SourceError(f"{path or url}: {transport_problem(e)}") from None
            except _TooLarge:
                raise SourceError(f"{path or url}: larger than {MAX_BYTES // (1024 * 1024)} MB") from None
            if answer.status in (401, 403):
                check = f"the token in {self.token_env}" + (f" and the user in {self.user_env}" if self.user_env
                                                             else "")
                where = f"{path}: " if path else ""
                raise SourceError(f"{where}{self.describe()}: {_status(answer)} from {url}: check {check}")
            if answer.status not in RETRY_STATUS:
                return answer
            delay = attempts.delay_before_retry(True, retry_after_from_headers(answer.headers))
            if delay is None:
                return answer
            self.sleep(delay)

    def _json(self, answer: _Answer) -> dict[str, Any]:
        if answer.status != 200:
            raise SourceError(f"{answer.url}: answered {_status(answer)}")
        try:
            data = json.loads(answer.body)
        except (ValueError, UnicodeDecodeError):
            raise SourceError(f"{answer.url}: answered something that is not JSON; is {self.base} Confluence's base "
                              "URL?") from None
        if not isinstance(data, dict):
            raise SourceError(f"{answer.url}: answered JSON that is not an object; is {self.base} Confluence's base "
                              "URL?")
        return data


class _TooLarge(Exception):
    pass


def _one_get(client: httpx.Client, url: str) -> _Answer:
    with client.stream("GET", url) as response:
        if response.status_code != 200:
            return _Answer(url, response.status_code, response.headers, b"")
        chunks, size = [], 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > MAX_BYTES:
                raise _TooLarge
            chunks.append(chunk)
        return _Answer(url, 200, response.headers, b"".join(chunks))


def _results(data: Mapping[str, Any], url: str) -> list[Mapping[str, Any]]:
    results = data.get("results")
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise SourceError(f"{url}: answered JSON without a list of results; not Confluence's REST API?")
    return results


def _page(result: Mapping[str, Any], web: str, url: str) -> _Page:
    """A listed page from its JSON (SourceError naming the URL when it is not one)."""
    try:
        version = result.get("version") or {}
        webui = (result.get("_links") or {}).get("webui") or ""
        return _Page(id=str(result["id"]), title=str(result.get("title") or ""),
                     version=str(version.get("number", "")),
                     ancestors=tuple((str(a["id"]), str(a.get("title") or "")) for a in result.get("ancestors") or ()),
                     url=web + webui if webui else "", author=_author(version), when=str(version.get("when") or ""),
                     restriction=_restriction(result, url))
    except (KeyError, TypeError, AttributeError):
        raise SourceError(f"{url}: a result that is not a page (no id); not Confluence's REST API?") from None


def _restriction(content: Mapping[str, Any], url: str) -> frozenset[str] | None:
    """The groups a page's own read restriction allows (frozenset() when only named users), None when it has none."""
    try:
        read = ((content.get("restrictions") or {}).get("read") or {}).get("restrictions") or {}
        groups = frozenset(str(g["name"]) for g in (read.get("group") or {}).get("results") or ())
        users = (read.get("user") or {}).get("results") or ()
    except (KeyError, TypeError, AttributeError):
        raise SourceError(f"{url}: a page's restrictions are not Confluence's (no group names)") from None
    return groups if groups or users else None


def _whole(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _author(version: Mapping[str, Any]) -> str:
    by = version.get("by") or {}
    return str(by.get("displayName") or by.get("publicName") or "") if isinstance(by, dict) else ""


def _id_order(page_id: str) -> tuple[int, str]:
    return (int(page_id), "") if page_id.isdigit() else (0, page_id)


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc.lower()


def _status(answer: _Answer) -> str:
    try:
        return f"HTTP {answer.status} {HTTPStatus(answer.status).phrase}"
    except ValueError:
        return f"HTTP {answer.status}"


def confluence_reader(location: str, options: Mapping[str, Any], known: Mapping[str, str] | None = None, *,
                      cache_dir: Path | None = None) -> ConfluenceReader:
    """A ConfluenceReader from a source's location (the base URL) and options (`space`, `token-env`, `user-env`,
    `attachments`, `max-pages`); `known` and the cache unused (the versions come with the listing)."""
    opts = {k.replace("_", "-"): v for k, v in options.items()}
    shown = without_credentials(location)  # the reader refuses credentials; messages never show them
    unknown = sorted(set(opts) - set(OPTIONS))
    if unknown:
        raise SourceError(f"confluence source {shown}: unknown option {unknown[0]} ({', '.join(OPTIONS)})")
    if not str(opts.get("space") or "").strip():
        raise SourceError(f"confluence source {shown}: give the space's key with --option space=KEY")
    try:
        max_pages = int(opts.get("max-pages", DEFAULT_MAX_PAGES))
    except (TypeError, ValueError):
        raise SourceError(f"confluence source {shown}: max-pages must be a whole number") from None
    flag = opts.get("attachments", True)
    if not isinstance(flag, bool):
        word = str(flag).strip().lower()
        if word not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            raise SourceError(f"confluence source {shown}: attachments must be yes or no")
        flag = word in ("1", "true", "yes", "on")
    return ConfluenceReader(location, str(opts["space"]), token_env=str(opts.get("token-env") or DEFAULT_TOKEN_ENV),
                            user_env=str(opts.get("user-env") or ""), attachments=flag, max_pages=max_pages)
