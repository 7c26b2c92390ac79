"""The `web` source (issue 38): a website given by a start URL, crawled, or by a sitemap, which lists its pages.

A crawl follows links breadth-first from the start URL, on the same site only (scheme and host; with `same-path`, only
under the start URL's folder), at most `depth` links away and `max-pages` pages in all. robots.txt is honoured for the
user agent `rag-workbench`. Redirects are followed within the site (a page is named by its final URL; a redirect to
another site is not followed). A page is listed when it is HTML or a type the loaders read (PDF, DOCX, ...); the HTML
loader extracts its main content, so the reader gives the page's bytes as they came.

Each item's `version` is the ETag (or else the Last-Modified) the server gave, so a re-sync skips unchanged pages
without embedding them. The reader is given the previous sync's versions (`known`, path -> version) and asks
conditionally (`If-None-Match` / `If-Modified-Since`) where it can: an answer 304 lists the page with its old
version, and its bytes are fetched only if `read` is called. A crawl needs a page's body for its links, so it asks
conditionally only for the pages it will not take links from (those `depth` links away, and every page of a
sitemap): the conditional request saves bandwidth there, and the embedding of unchanged pages in every case.

A 404 (or 410) page is not listed, so the sync deletes its document; a page that answers another error (5xx, a 429
after the retries, a refused connection) is listed, its `read` raising SourceError, so the sync counts it failed
and keeps its document. A start URL (or sitemap) that cannot be read raises SourceError from `items()`.
"""

from __future__ import annotations

import email.utils
import time
import xml.etree.ElementTree as ET
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urldefrag, urlencode, urljoin, urlsplit, urlunsplit
from urllib.robotparser import RobotFileParser

import httpx

from ..errors import SourceError
from ..loaders.formats import SUPPORTED_EXTENSIONS
from ..retry import Attempts, RetryPolicy, retry_after_from_headers
from .records import SourceItem

USER_AGENT = "rag-workbench"
DEFAULT_DEPTH = 2
DEFAULT_MAX_PAGES = 200
CONNECT_TIMEOUT = 15.0  # seconds to connect; a docs site answers in well under one
READ_TIMEOUT = 60.0  # seconds between two reads of an answer (a large PDF streams for longer, in pieces)
# 429 and 503 are retried twice, waiting what Retry-After says (at most MAX_WAIT) or the backoff (0.5 s, 1 s).
RETRY = RetryPolicy(timeout=READ_TIMEOUT, max_retries=2, base_delay=0.5, max_delay=30.0)
RETRY_STATUS = frozenset({429, 503})
MAX_REDIRECTS = 10
MAX_BYTES = 50 * 1024 * 1024  # a page larger than this is refused (as loader.max-file-mb's default)
MAX_SITEMAPS = 50  # the sitemaps of one sitemap index read at most
GONE = frozenset({404, 410})

# Content types the loaders read -> the extension an item's path gets (only those loaders.formats supports).
_TYPES = {
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "text/markdown": "md",
    "text/plain": "txt",
    "text/csv": "csv",
}
LOADABLE_TYPES: Mapping[str, str] = {t: e for t, e in _TYPES.items() if e in SUPPORTED_EXTENSIONS}
_EXTENSIONS = tuple(dict.fromkeys(LOADABLE_TYPES.values()))


@dataclass(frozen=True)
class Page:
    """One answer, after the redirects: its final URL, status, headers and body (b"" for a 304 or an error)."""

    url: str
    status: int
    headers: httpx.Headers
    body: bytes = b""
    problem: str = ""  # why there is no answer (status 599), naming the URL

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    @property
    def version(self) -> str:
        return self.headers.get("etag") or self.headers.get("last-modified") or ""


class WebReader:
    """Reads a website (see the module's docstring). `known`: the previous sync's version of each path, for
    conditional requests; `sleep` is the wait between retries (a test's fake one)."""

    def __init__(self, url: str, *, depth: int = DEFAULT_DEPTH, max_pages: int = DEFAULT_MAX_PAGES,
                 same_path: bool = False, known: Mapping[str, str] | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SourceError(f"web source {url}: not an http(s) URL")
        if depth < 0 or max_pages < 1:
            raise SourceError(f"web source {url}: depth must be 0 or more and max-pages 1 or more")
        self.url = normalize(url)
        self.depth = depth
        self.max_pages = max_pages
        self.same_path = same_path
        self.known = dict(known or {})
        self._sleep = sleep
        start = urlsplit(self.url)
        self._site = (start.scheme, start.netloc)
        self._prefix = start.path[:start.path.rfind("/") + 1] if same_path else "/"
        self._robots: RobotFileParser | None = None

    def describe(self) -> str:
        return f"web {self.url}"

    # ------------------------------------------------------------------------------------ listing
    def items(self) -> Iterator[SourceItem]:
        with _client() as client:
            self._robots = None
            self._robots = self._read_robots(client)
            if not self._robots.can_fetch(USER_AGENT, self.url):
                raise SourceError(f"{self.url}: robots.txt does not allow {USER_AGENT} to read it")
            try:
                start = self._fetch(client, self.url)
            except _OffSite as e:
                raise SourceError(f"{self.url}: redirects to {e}, off the site or where robots.txt forbids") from None
            if start.status != 200:
                raise SourceError(f"{self.url}: answered {_status(start)}")
            if _is_sitemap(start):
                yield from self._from_sitemap(client, start)
            elif LOADABLE_TYPES.get(start.content_type) == "html" or (not start.content_type and _looks_html(start)):
                yield from self._crawl(client, start)
            else:
                raise SourceError(f"{self.url}: is not an HTML page or a sitemap "
                                  f"(content type {start.content_type or 'none'})")

    def _crawl(self, client: httpx.Client, start: Page) -> Iterator[SourceItem]:
        seen = {self.url, start.url}
        taken: set[str] = set()
        queue: deque[tuple[str, int]] = deque()
        requested = 1
        page: Page | None = start
        url, level = start.url, 0
        while True:
            if page is not None:
                item = self._item(page, taken)
                if item is not None:
                    yield item
                if level < self.depth and page.status == 200 and LOADABLE_TYPES.get(page.content_type) == "html":
                    for link in links(page.body, page.url):
                        if link not in seen and self._allowed(link):
                            seen.add(link)
                            queue.append((link, level + 1))
            if not queue or requested >= self.max_pages:
                return
            url, level = queue.popleft()
            requested += 1
            page = self._get(client, url, conditional=level >= self.depth)
            if page is not None:
                if page.url != url and page.url in seen:
                    page = None  # a redirect to a page listed already
                seen.add(url if page is None else page.url)

    def _from_sitemap(self, client: httpx.Client, sitemap: Page) -> Iterator[SourceItem]:
        taken: set[str] = set()
        seen: set[str] = set()
        requested = 0
        for url in self._sitemap_urls(client, sitemap):
            if url in seen or not self._allowed(url):
                continue
            seen.add(url)
            if requested >= self.max_pages:
                return
            requested += 1
            page = self._get(client, url, conditional=True)
            if page is not None and (page.url == url or page.url not in seen):
                seen.add(page.url)
                item = self._item(page, taken)
                if item is not None:
                    yield item

    def _sitemap_urls(self, client: httpx.Client, first: Page) -> Iterator[str]:
        """The page URLs a sitemap lists, in its order; a sitemap index's sitemaps are read in turn."""
        sitemaps, read = deque([first]), {first.url}
        while sitemaps:
            sitemap = sitemaps.popleft()
            kind, locs = parse_sitemap(sitemap.body, sitemap.url)
            for loc in locs:
                if kind == "urlset":
                    yield loc
                elif loc not in read and len(read) < MAX_SITEMAPS and self._same_site(loc):
                    read.add(loc)
                    try:
                        child = self._fetch(client, loc)
                    except _OffSite as e:
                        raise SourceError(f"{loc}: a sitemap that redirects off the site, to {e}") from None
                    if child.status != 200 or not _is_sitemap(child):
                        raise SourceError(f"{loc}: the sitemap {sitemap.url} lists it, and it answered "
                                          f"{_status(child) if child.status != 200 else 'no sitemap'}")
                    sitemaps.append(child)

    def _item(self, page: Page, taken: set[str]) -> SourceItem | None:
        """The item of one answer (200, 304 or an error), or None: gone, not a type the loaders read, or its path
        taken by another URL already (the first one keeps it)."""
        url = page.url
        if page.status in GONE:
            return None
        if page.status == 200:
            ext = LOADABLE_TYPES.get(page.content_type) or ("html" if not page.content_type and _looks_html(page)
                                                            else None)
            if ext is None:
                return None
            path, version, body = page_path(url, ext), page.version, page.body
            read: Callable[[], bytes] = lambda: body  # noqa: E731 - the bytes in hand
        elif page.status == 304:
            path = self._known_path(url) or page_path(url, "html")
            version = self.known.get(path, "")
            read = lambda: self._read(url)  # noqa: E731
        else:
            path, version = self._known_path(url) or page_path(url, "html"), ""
            problem = page.problem or f"{url}: answered {_status(page)}"
            read = lambda: _raise(problem)  # noqa: E731
        if path in taken:
            return None
        taken.add(path)
        return SourceItem(path=path, read=read, version=version, url=url)

    # ------------------------------------------------------------------------------------ fetching
    def _get(self, client: httpx.Client, url: str, *, conditional: bool) -> Page | None:
        """A listed page's answer; an error it gave stands in its status (599: no answer); None when it led off the
        site (a redirect elsewhere or to a page robots.txt forbids)."""
        try:
            return self._fetch(client, url, conditional=conditional)
        except _OffSite:
            return None
        except SourceError as e:
            return Page(url, 599, httpx.Headers(), problem=str(e))

    def _read(self, url: str) -> bytes:
        """The bytes of a page listed as unchanged (304), for a sync that reads it anyway."""
        with _client() as client:
            try:
                page = self._fetch(client, url)
            except _OffSite:
                raise SourceError(f"{url}: now redirects off the site") from None
        if page.status != 200:
            raise SourceError(f"{url}: answered {_status(page)}")
        return page.body

    def _fetch(self, client: httpx.Client, url: str, *, conditional: bool = False) -> Page:
        """GET `url`, following redirects on the site (_OffSite when one leaves it or robots.txt forbids its
        target), retrying 429/503. Raises SourceError when there is no answer."""
        for _ in range(MAX_REDIRECTS + 1):
            headers = self._conditions(url) if conditional else {}
            page = self._attempts(client, url, headers)
            if page.status not in (301, 302, 303, 307, 308):
                return page
            target = page.headers.get("location")
            if not target:
                return page
            url = normalize(urljoin(url, target))
            if not self._same_site(url) or (self._robots is not None and not self._robots.can_fetch(USER_AGENT, url)):
                raise _OffSite(url)
        raise SourceError(f"{url}: more than {MAX_REDIRECTS} redirects")

    def _attempts(self, client: httpx.Client, url: str, headers: Mapping[str, str]) -> Page:
        attempts = Attempts(RETRY)
        while True:
            attempts.next_timeout()
            try:
                page = _one_get(client, url, headers)
            except httpx.HTTPError as e:
                raise SourceError(f"{url}: {transport_problem(e)}") from None
            if page.status not in RETRY_STATUS:
                return page
            delay = attempts.delay_before_retry(True, retry_after_from_headers(page.headers))
            if delay is None:
                return page
            self._sleep(delay)

    def _conditions(self, url: str) -> dict[str, str]:
        version = self.known.get(self._known_path(url) or "", "")
        if not version:
            return {}
        try:
            email.utils.parsedate_to_datetime(version)
        except (TypeError, ValueError, IndexError):
            return {"If-None-Match": version}
        return {"If-Modified-Since": version}

    def _known_path(self, url: str) -> str | None:
        """The path this URL had at the previous sync (its extension came from its content type then)."""
        for ext in _EXTENSIONS:
            path = page_path(url, ext)
            if path in self.known:
                return path
        return None

    def _read_robots(self, client: httpx.Client) -> RobotFileParser:
        """The site's robots.txt: none (404, or a redirect off the site) allows everything, 401/403 nothing (as
        urllib.robotparser reads them); a server error or no answer raises SourceError (the site's wishes are
        unknown)."""
        url = urlunsplit((*self._site, "/robots.txt", "", ""))
        robots = RobotFileParser(url)
        try:
            page = self._fetch(client, url)
        except _OffSite:
            page = Page(url, 404, httpx.Headers())  # the start URL then says what is wrong, if anything is
        if page.status in (401, 403):
            robots.parse(["User-agent: *", "Disallow: /"])
        elif 400 <= page.status < 500 and page.status not in RETRY_STATUS:
            robots.parse([])
        elif page.status != 200:
            raise SourceError(f"{url}: answered {_status(page)}")
        else:
            robots.parse(page.body.decode("utf-8", "replace").splitlines())
        return robots

    def _same_site(self, url: str) -> bool:
        parts = urlsplit(url)
        return (parts.scheme, parts.netloc) == self._site

    def _allowed(self, url: str) -> bool:
        """On the site, under the path prefix, and allowed by robots.txt."""
        return (self._same_site(url) and urlsplit(url).path.startswith(self._prefix)
                and (self._robots is None or self._robots.can_fetch(USER_AGENT, url)))


class _OffSite(Exception):
    """A redirect left the site (or led where robots.txt forbids): not followed."""


def web_reader(location: str, options: Mapping[str, Any], known: Mapping[str, str] | None = None, *,
               cache_dir: Path | None = None) -> WebReader:
    """A WebReader from a source's location (the start URL or a sitemap's) and options: `depth`, `max-pages`,
    `same-path` (true/false); no cache (`known` carries what a re-sync asks "changed since?" with)."""
    opts = {k.replace("_", "-"): v for k, v in options.items()}
    unknown = sorted(set(opts) - {"depth", "max-pages", "same-path"})
    if unknown:
        raise SourceError(f"web source {location}: unknown option {unknown[0]} (depth, max-pages, same-path)")
    try:
        depth = int(opts.get("depth", DEFAULT_DEPTH))
        max_pages = int(opts.get("max-pages", DEFAULT_MAX_PAGES))
    except (TypeError, ValueError):
        raise SourceError(f"web source {location}: depth and max-pages must be whole numbers") from None
    same = opts.get("same-path", False)
    same_path = same if isinstance(same, bool) else str(same).strip().lower() in ("1", "true", "yes", "on")
    return WebReader(location, depth=depth, max_pages=max_pages, same_path=same_path, known=known)


# ---------------------------------------------------------------------------------------- URLs and names
def normalize(url: str) -> str:
    """The URL a page is known by: fragment dropped, scheme and host lower-cased, default port dropped, "/" for an
    empty path."""
    url, _ = urldefrag(url.strip())
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.port and (parts.scheme, parts.port) not in (("http", 80), ("https", 443)):
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme.lower(), host, parts.path or "/", parts.query, ""))


def page_path(url: str, ext: str = "html") -> str:
    """An item's path from its URL: the URL's path without the host ("/" -> "index", "/docs/" -> "docs/index"), its
    query string (sorted, so the same query always gives the same name) after "@", and `.ext` unless it ends so
    (".htm" counts as ".html"): "/docs/guide?b=2&a=1" -> "docs/guide@a=1&b=2.html"."""
    parts = urlsplit(url)
    segments: list[str] = []
    for segment in parts.path.split("/"):
        if segment == "..":
            del segments[-1:]
        elif segment not in ("", "."):
            name = unquote(segment).replace("\\", "_").replace("/", "_")
            segments.append("_" * len(name) if name in (".", "..") else name)  # "%2E%2E" is no way up
    if not segments or parts.path.endswith("/"):
        segments.append("index")
    name = segments[-1]
    if parts.query:
        name += "@" + urlencode(sorted(parse_qsl(parts.query, keep_blank_values=True)))
    suffix = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    if suffix != ext and not (ext == "html" and suffix == "htm"):
        name += "." + ext
    segments[-1] = name
    return "/".join(segments)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.base = ""
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        href = values.get("href")
        if not href:
            return
        if tag == "base" and not self.base:
            self.base = href
        elif tag in ("a", "area") and "nofollow" not in (values.get("rel") or "").lower().split():
            self.hrefs.append(href)


def links(body: bytes, url: str) -> list[str]:
    """The http(s) links of an HTML page, absolute and normalized, in the page's order, each once."""
    parser = _Links()
    parser.feed(body.decode("utf-8", "replace"))
    parser.close()
    base = urljoin(url, parser.base) if parser.base else url
    found: dict[str, None] = {}
    for href in parser.hrefs:
        absolute = urljoin(base, href.strip())
        if urlsplit(absolute).scheme in ("http", "https"):
            found.setdefault(normalize(absolute))
    return list(found)


def parse_sitemap(body: bytes, url: str) -> tuple[str, list[str]]:
    """("urlset" or "sitemapindex", the <loc> URLs in order) of a sitemap; SourceError when it is not one."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError as e:
        raise SourceError(f"{url}: is not a readable sitemap ({e})") from None
    kind = _local(root.tag)
    if kind not in ("urlset", "sitemapindex"):
        raise SourceError(f"{url}: is not a sitemap (its root is <{kind}>)")
    return kind, [normalize(urljoin(url, (e.text or "").strip())) for e in root.iter()
                  if _local(e.tag) == "loc" and (e.text or "").strip()]


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _is_sitemap(page: Page) -> bool:
    head = page.body[:512].lstrip().lower()
    return (page.content_type.endswith("xml") and "xhtml" not in page.content_type or head.startswith(b"<?xml")) \
        and (b"<urlset" in page.body[:4096] or b"<sitemapindex" in page.body[:4096])


def _looks_html(page: Page) -> bool:
    head = page.body[:512].lstrip().lower()
    return head.startswith(b"<!doctype html") or head.startswith(b"<html")


# ---------------------------------------------------------------------------------------- HTTP
def _client() -> httpx.Client:
    return httpx.Client(timeout=httpx.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT), follow_redirects=False,
                        headers={"User-Agent": USER_AGENT})


def _one_get(client: httpx.Client, url: str, headers: Mapping[str, str]) -> Page:
    with client.stream("GET", url, headers=dict(headers)) as response:
        page = Page(url, response.status_code, response.headers)
        kind = page.content_type
        if page.status != 200 or (kind and kind not in LOADABLE_TYPES and not kind.endswith("xml")):
            return page  # an error, or a type no loader reads (an image, a video): its body is not downloaded
        chunks, size = [], 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > MAX_BYTES:
                raise SourceError(f"{url}: larger than {MAX_BYTES // (1024 * 1024)} MB")
            chunks.append(chunk)
        return Page(url, 200, response.headers, b"".join(chunks))


def _status(page: Page) -> str:
    return f"HTTP {page.status}"


def transport_problem(error: httpx.HTTPError) -> str:
    """What went wrong with a request that got no answer, in a few words (the confluence type says the same)."""
    if isinstance(error, httpx.TimeoutException):
        return "did not answer in time"
    if isinstance(error, httpx.ConnectError):
        return "cannot connect"
    return f"the connection failed ({type(error).__name__})"


def _raise(problem: str) -> bytes:
    raise SourceError(problem)
