"""The web source against a real HTTP server on a loopback port serving a small docs site: links, a sitemap index, a
redirect on the site and one off it, a 404, a 500, robots.txt excluding a folder, an off-site link, ETag and
Last-Modified with 304 answers to conditional requests, a page that changes between two crawls, and a 429 with
Retry-After before a 200."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from rag_core.errors import SourceError
from rag_core.sources.web import WebReader, links, page_path, web_reader
from tests.contracts.sources import SourceReaderContract, one_line
from tests.servers import FakeServer, RecordedRequest, Reply

HTML = "text/html; charset=utf-8"


@dataclass
class Doc:
    body: bytes
    type: str = HTML
    etag: str = ""
    modified: str = ""


def html(*hrefs: str, title: str = "page") -> bytes:
    anchors = "".join(f'<a href="{h}">{h}</a>' for h in hrefs)
    page = f"<!doctype html><html><head><title>{title}</title></head><body><main>{anchors}</main></body></html>"
    return page.encode()


class DocsSite(FakeServer):
    """A small docs site under /docs/; `docs` can be changed between crawls."""

    def __init__(self) -> None:
        super().__init__()
        self.docs: dict[str, Doc] = {}
        self.busy = 1  # 429s /docs/busy.html answers before its page
        self.robots_moved = False  # /robots.txt redirects to /robots-file.txt

    def build(self) -> None:
        other = f"http://localhost:{self.port}"  # the same server under another host name: another site
        self.docs = {
            "/robots.txt": Doc(b"User-agent: *\nDisallow: /docs/private/\n", "text/plain"),
            "/docs/": Doc(html("intro.html", "guide", "private/secret.html", "old.html", "missing.html", "away",
                               f"{other}/offsite.html", "manual.pdf", "logo.png", "busy.html", "#top",
                               "mailto:a@b.c")),
            "/docs/intro.html": Doc(html("guide", "deep/a.html", "search?b=2&a=1"), etag='"intro-1"'),
            "/docs/guide": Doc(html("deep/a.html", "broken.html"), modified="Mon, 02 Nov 2026 10:00:00 GMT"),
            "/docs/new.html": Doc(html(), etag='"new-1"'),
            "/docs/manual.pdf": Doc(b"%PDF-1.4 a manual", "application/pdf", etag='"pdf-1"'),
            "/docs/logo.png": Doc(b"\x89PNG", "image/png"),
            "/docs/busy.html": Doc(html()),
            "/docs/deep/a.html": Doc(html("b.html"), etag='"a-1"'),
            "/docs/deep/b.html": Doc(html()),
            "/docs/search?b=2&a=1": Doc(html(), modified="Tue, 03 Nov 2026 10:00:00 GMT"),
            "/docs/private/secret.html": Doc(html()),
            "/offsite.html": Doc(html()),
            "/elsewhere.html": Doc(html()),
            "/sitemap.xml": Doc(b'<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                                b"<sitemap><loc>/sitemap-docs.xml</loc></sitemap></sitemapindex>", "application/xml"),
            "/sitemap-docs.xml": Doc(self._urlset("/docs/", "/docs/intro.html", "/docs/guide", "/docs/missing.html",
                                                  "/docs/private/secret.html", "/docs/old.html",
                                                  f"{other}/offsite.html", "/docs/broken.html"), "application/xml"),
        }

    def _urlset(self, *locs: str) -> bytes:
        entries = "".join(f"<url><loc>{self.url if loc.startswith('/') else ''}{loc}</loc></url>" for loc in locs)
        return (f'<?xml version="1.0" encoding="UTF-8"?>'
                f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>').encode()

    def handle(self, request: RecordedRequest) -> Reply:
        path = request.path
        if path == "/robots.txt" and self.robots_moved:
            return Reply(301, headers={"Location": "/robots-file.txt"})
        if path == "/robots-file.txt":
            path = "/robots.txt"
        if path == "/docs/old.html":
            return Reply(301, headers={"Location": "/docs/new.html"})
        if path == "/docs/away":
            return Reply(302, headers={"Location": f"http://localhost:{self.port}/elsewhere.html"})
        if path == "/docs/broken.html":
            return Reply(500, b"oops")
        if path == "/docs/busy.html" and self.busy:
            self.busy -= 1
            return Reply(429, b"slow down", {"Retry-After": "1"})
        doc = self.docs.get(path)
        if doc is None:
            return Reply(404, b"not found", {"Content-Type": "text/plain"})
        headers = {"Content-Type": doc.type}
        if doc.etag:
            headers["ETag"] = doc.etag
        if doc.modified:
            headers["Last-Modified"] = doc.modified
        if (doc.etag and request.header("if-none-match") == doc.etag) or \
                (doc.modified and request.header("if-modified-since") == doc.modified):
            return Reply(304, headers=headers)
        return Reply(200, doc.body, headers)

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    def conditional(self) -> list[str]:
        return [r.path for r in self.requests if r.header("if-none-match") or r.header("if-modified-since")]


@pytest.fixture
def site() -> Iterator[DocsSite]:
    with DocsSite() as server:
        server.build()
        yield server


def reader(site: DocsSite, start: str = "/docs/", waits: list[float] | None = None, **kwargs: object) -> WebReader:
    sleep = (waits.append if waits is not None else lambda s: None)
    return WebReader(site.url + start, sleep=sleep, **kwargs)  # type: ignore[arg-type]


CRAWLED = ["docs/index.html", "docs/intro.html", "docs/guide.html", "docs/new.html", "docs/manual.pdf",
           "docs/busy.html", "docs/deep/a.html", "docs/search@a=1&b=2.html", "docs/broken.html"]


def test_a_crawl_lists_the_sites_pages_breadth_first_within_the_depth(site: DocsSite) -> None:
    waits: list[float] = []
    items = list(reader(site, waits=waits).items())

    assert [i.path for i in items] == CRAWLED
    by_path = {i.path: i for i in items}
    assert by_path["docs/new.html"].url == f"{site.url}/docs/new.html"  # named by its final URL
    assert by_path["docs/search@a=1&b=2.html"].url == f"{site.url}/docs/search?b=2&a=1"
    assert {p: i.version for p, i in by_path.items() if i.version} == {
        "docs/intro.html": '"intro-1"', "docs/guide.html": "Mon, 02 Nov 2026 10:00:00 GMT", "docs/new.html": '"new-1"',
        "docs/manual.pdf": '"pdf-1"', "docs/deep/a.html": '"a-1"',
        "docs/search@a=1&b=2.html": "Tue, 03 Nov 2026 10:00:00 GMT"}
    assert by_path["docs/intro.html"].read() == site.docs["/docs/intro.html"].body
    with pytest.raises(SourceError, match="broken.html: answered HTTP 500"):
        by_path["docs/broken.html"].read()

    seen = site.paths()
    assert seen[0] == "/robots.txt" and seen.count("/robots.txt") == 1
    assert seen.count("/docs/busy.html") == 2 and waits == [1.0]  # a 429, Retry-After honoured, then the page
    for never in ("/docs/private/secret.html", "/offsite.html", "/elsewhere.html", "/docs/deep/b.html"):
        assert never not in seen, never  # robots.txt, off-site link, off-site redirect, beyond the depth
    assert seen.count("/docs/old.html") == seen.count("/docs/new.html") == 1
    assert "/docs/missing.html" in seen and "/docs/logo.png" in seen  # asked, not listed
    assert len(seen) == 15 and site.conditional() == []  # no versions known: nothing conditional


def test_a_recrawl_asks_conditionally_where_it_needs_no_links_and_sees_a_changed_page(site: DocsSite) -> None:
    first = {i.path: i.version for i in reader(site).items()}
    site.docs["/docs/guide"] = Doc(html("deep/a.html"), modified="Wed, 04 Nov 2026 10:00:00 GMT")
    site.busy = 0
    site.requests.clear()

    again = {i.path: i for i in reader(site, known=first).items()}

    assert again["docs/guide.html"].version == "Wed, 04 Nov 2026 10:00:00 GMT"  # changed: a new version
    assert "docs/broken.html" not in again  # no longer linked
    unchanged = {p for p, i in again.items() if i.version == first[p]}
    assert unchanged == set(again) - {"docs/guide.html"}
    # The last level's pages are asked conditionally (304); the others are fetched for their links.
    assert site.conditional() == ["/docs/deep/a.html", "/docs/search?b=2&a=1"]
    assert site.paths().count("/docs/deep/a.html") == 1
    assert again["docs/deep/a.html"].read() == site.docs["/docs/deep/a.html"].body  # fetched when read
    assert site.paths().count("/docs/deep/a.html") == 2


def test_a_sitemap_index_lists_the_pages_and_a_resync_downloads_none_unchanged(site: DocsSite) -> None:
    items = list(reader(site, "/sitemap.xml").items())
    paths = [i.path for i in items]
    assert paths == ["docs/index.html", "docs/intro.html", "docs/guide.html", "docs/new.html", "docs/broken.html"]
    assert "/docs/deep/a.html" not in site.paths()  # a sitemap is not crawled

    known = {i.path: i.version for i in items}
    site.requests.clear()
    again = {i.path: i for i in reader(site, "/sitemap.xml", known=known).items()}
    assert list(again) == paths
    assert {p: i.version for p, i in again.items()} == known
    assert site.conditional() == ["/docs/intro.html", "/docs/guide", "/docs/new.html"]
    assert site.paths() == ["/robots.txt", "/sitemap.xml", "/sitemap-docs.xml", "/docs/", "/docs/intro.html",
                            "/docs/guide", "/docs/missing.html", "/docs/old.html", "/docs/new.html",
                            "/docs/broken.html"]
    assert again["docs/guide.html"].read() == site.docs["/docs/guide"].body
    assert site.paths()[-1] == "/docs/guide" and site.requests[-1].header("if-modified-since") is None


def test_the_limits_and_the_path_prefix(site: DocsSite) -> None:
    assert [i.path for i in reader(site, depth=0).items()] == ["docs/index.html"]
    assert [i.path for i in reader(site, max_pages=3).items()] == CRAWLED[:3]
    assert [i.path for i in reader(site, "/docs/deep/a.html", same_path=True).items()] == \
        ["docs/deep/a.html", "docs/deep/b.html"]


@pytest.mark.parametrize(("start", "message"), [
    ("/docs/logo.png", "is not an HTML page or a sitemap (content type image/png)"),
    ("/docs/missing.html", "answered HTTP 404"),
    ("/docs/private/secret.html", "robots.txt does not allow rag-workbench"),
    ("/docs/away", "redirects to http://localhost"),
])
def test_a_start_url_that_cannot_be_crawled_is_one_line_from_items(site: DocsSite, start: str, message: str) -> None:
    with pytest.raises(SourceError) as raised:
        list(reader(site, start).items())
    assert one_line(raised.value).startswith(f"{site.url}{start}: ") and message in str(raised.value)


def test_a_robots_txt_redirected_on_the_site_is_followed(site: DocsSite) -> None:
    site.robots_moved = True
    paths = [i.path for i in reader(site, depth=1).items()]
    assert site.paths()[:2] == ["/robots.txt", "/robots-file.txt"] and paths
    assert "/docs/private/secret.html" not in site.paths()


def test_a_site_that_does_not_answer() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(SourceError, match=rf"127.0.0.1:{port}/robots.txt: cannot connect"):
        list(WebReader(f"http://127.0.0.1:{port}/docs/").items())


def test_page_paths_are_stable_relative_names() -> None:
    assert page_path("http://h/") == "index.html"
    assert page_path("http://h/docs/") == "docs/index.html"
    assert page_path("http://h/docs/guide") == "docs/guide.html"
    assert page_path("http://h/docs/a.htm") == "docs/a.htm"
    assert page_path("http://h/docs/a.html") == "docs/a.html"
    assert page_path("http://h/f/manual.pdf", "pdf") == "f/manual.pdf"
    assert page_path("http://h/get?id=3&x=", "pdf") == "get@id=3&x=.pdf"
    assert page_path("http://h/s?b=2&a=1") == page_path("http://h/s?a=1&b=2") == "s@a=1&b=2.html"
    assert page_path("http://h/a/../%C3%BCber%20uns/x%2Fy") == "über uns/x_y.html"
    assert page_path("http://h/%2E%2E/a") == "__/a.html"
    assert links(b'<base href="/b/"><a href="c#x">c</a><a href="c">c</a><a rel="nofollow" href="/n">n</a>',
                 "http://H:80/a") == ["http://h/b/c"]


def test_the_factory_reads_the_options() -> None:
    r = web_reader("https://example.org/docs/", {"depth": "1", "max_pages": "5", "same-path": "true"}, {"a": "b"})
    assert (r.depth, r.max_pages, r.same_path, r.known) == (1, 5, True, {"a": "b"})
    assert r.describe() == "web https://example.org/docs/"
    with pytest.raises(SourceError, match="unknown option deep"):
        web_reader("https://example.org/", {"deep": "1"})
    with pytest.raises(SourceError, match="not an http"):
        web_reader("ftp://example.org/", {})


class TestWebReaderContract(SourceReaderContract):
    @pytest.fixture
    def reader(self, site: DocsSite) -> WebReader:
        return reader(site, depth=1)  # every page of it readable

    @pytest.fixture
    def broken(self, site: DocsSite) -> tuple[WebReader, str]:
        return reader(site), "docs/broken.html"

    @pytest.fixture
    def unreachable(self, site: DocsSite) -> WebReader:
        return reader(site, "/nowhere/")


def test_the_html_loader_reads_a_pages_item(site: DocsSite) -> None:
    from rag_core.loaders.load import load_bytes

    site.docs["/docs/"] = Doc(b"<!doctype html><html><head><title>Docs</title></head><body><nav>menu</nav>"
                              b"<main><h1>Runbooks</h1><p>Restart the disk service first.</p></main></body></html>")
    item = next(reader(site, depth=0).items())
    document = load_bytes(item.read(), item.path)
    assert (document.doc_id, document.extension) == ("docs/index.html", "html")
    assert "Restart the disk service first." in document.text
