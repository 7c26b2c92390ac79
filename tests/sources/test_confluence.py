"""The confluence source against a real HTTP server on a loopback port speaking Confluence's REST API (v1): a space of
nested pages listed two at a time, attachments (one of a type the loaders read, one not), read restrictions on a page
and on an ancestor, a user-only restricted page, Bearer and Basic auth (401 for a wrong token), a 429 with
Retry-After, a page deleted between the listing and its read, malformed JSON, an unknown space and a hang; then three
syncs into a real knowledge base."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from rag_core.errors import SourceError
from rag_core.sources.confluence import ConfluenceReader, confluence_reader
from tests.contracts.sources import SourceReaderContract, one_line
from tests.servers import FakeServer, RecordedRequest, Reply

TOKEN = "s3cret-pat-0123456789"
USER = "ana@example.org"


@dataclass
class Page:
    title: str
    parent: str = ""
    version: int = 1
    body: str = ""
    groups: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    attachments: list[tuple[str, int, bytes]] = field(default_factory=list)  # (file name, version, bytes)


class ConfluenceServer(FakeServer):
    """Confluence under /wiki with the space OPS; `pages` (id -> Page) may change between listings."""

    def __init__(self, user: str = "") -> None:
        super().__init__()
        self.user = user
        self.pages: dict[str, Page] = {}
        self.busy = 0              # 429s the first listing request answers before its page
        self.gone: set[str] = set()  # listed, 404 when fetched
        self.malformed = False     # the listing answers what is not JSON
        self.next_links = True     # False: no _links (the client goes by size < limit)
        self.media = False         # attachments download by a redirect to another host (as Cloud's media API)

    def build(self) -> None:
        self.pages = {
            "1": Page("Ops Home", body="<p>Welcome to operations.</p>"),
            "2": Page("Runbooks", "1", body="<p>Every runbook of the team.</p>"),
            "3": Page("Disk full", "2", version=4, body="<h2>Steps</h2><p>Restart the disk service first.</p>",
                      attachments=[("disk.md", 2, b"# Disk\n\nClean /var/log when the disk is full."),
                                   ("screen.mp4", 1, b"\x00\x00video")]),
            "4": Page("Secrets", "1", body="<p>Where the vault keys are.</p>", groups=("sre", "ops-admins"),
                      attachments=[("keys.txt", 1, b"Rotate the vault keys every quarter.")]),
            "5": Page("Rotation", "4", body="<p>Rotate on Mondays.</p>", groups=("oncall", "sre")),
            "6": Page("Private notes", "1", body="<p>Ana's notes.</p>", users=("ana",)),
            "7": Page("A/B testing", "1", body="<p>How experiments run.</p>"),
            "8": Page("Runbooks", "1", body="<p>The old runbooks.</p>"),
        }

    @property
    def base(self) -> str:
        return f"{self.url}/wiki"

    def ancestors(self, page_id: str) -> list[dict[str, str]]:
        chain: list[dict[str, str]] = []
        parent = self.pages[page_id].parent
        while parent:
            chain.insert(0, {"id": parent, "title": self.pages[parent].title, "type": "page"})
            parent = self.pages[parent].parent
        return chain

    def restrictions(self, page: Page) -> dict[str, Any]:
        return {"read": {"operation": "read", "restrictions": {
            "group": {"results": [{"type": "group", "name": g} for g in page.groups], "size": len(page.groups)},
            "user": {"results": [{"type": "known", "username": u} for u in page.users], "size": len(page.users)}}}}

    def content(self, page_id: str) -> dict[str, Any]:
        page = self.pages[page_id]
        return {"id": page_id, "type": "page", "status": "current", "title": page.title,
                "version": {"number": page.version, "when": f"2026-11-0{page.version}T10:00:00.000Z",
                            "by": {"type": "known", "displayName": "Ana Ops"}},
                "ancestors": self.ancestors(page_id), "restrictions": self.restrictions(page),
                "_links": {"webui": f"/spaces/OPS/pages/{page_id}", "self": f"{self.base}/rest/api/content/{page_id}"}}

    def paged(self, path: str, query: dict[str, list[str]], results: list[dict[str, Any]]) -> Reply:
        start, limit = int(query.get("start", ["0"])[0]), int(query.get("limit", ["25"])[0])
        limit = min(limit, 2)  # as Cloud does, the server gives fewer than asked
        chunk = results[start:start + limit]
        links: dict[str, str] = {"base": self.base, "context": "/wiki"}
        if start + limit < len(results):
            rest = "&".join(f"{k}={v[0]}" for k, v in query.items() if k != "start")
            links["next"] = f"{path.removeprefix('/wiki')}?{rest}&start={start + limit}"
        answer = {"results": chunk, "start": start, "limit": limit, "size": len(chunk), "_links": links}
        if not self.next_links:
            del answer["_links"]
        return Reply.json(200, answer)

    def handle(self, request: RecordedRequest) -> Reply:
        if request.path.startswith("/media/"):  # the other host: no token asked
            _, _, page_id, name = request.path.split("?")[0].split("/")
            return Reply(200, dict((f, d) for f, _, d in self.pages[page_id].attachments)[name])
        expected = (f"Basic {base64.b64encode(f'{self.user}:{TOKEN}'.encode()).decode()}" if self.user
                    else f"Bearer {TOKEN}")
        if request.header("authorization") != expected:
            return Reply.json(401, {"statusCode": 401, "message": "Unauthorized"})
        parts = urlsplit(request.path)
        path, query = parts.path, parse_qs(parts.query)
        if path == "/wiki/rest/api/space/OPS":
            return Reply.json(200, {"key": "OPS", "name": "Operations", "type": "global"})
        if path.startswith("/wiki/rest/api/space/"):
            return Reply.json(404, {"statusCode": 404, "message": "No space with key"})
        if path == "/wiki/rest/api/content":
            if self.busy:
                self.busy -= 1
                return Reply.json(429, {"message": "Rate limited"}, headers={"Retry-After": "3"})
            if self.malformed:
                return Reply(200, b'{"results": [', {"Content-Type": "application/json"})
            assert query["spaceKey"] == ["OPS"] and query["type"] == ["page"] and query["status"] == ["current"]
            ordered = sorted(self.pages, key=int, reverse=True)  # not parents first
            return self.paged(path, query, [self.content(i) for i in ordered])
        pieces = path.removeprefix("/wiki/rest/api/content/").split("/")
        if path.startswith("/wiki/rest/api/content/") and pieces[0] in self.pages and pieces[0] not in self.gone:
            page_id = pieces[0]
            if pieces[1:] == ["child", "attachment"]:
                return self.paged(path, query, [
                    {"id": f"att{page_id}{n}", "type": "attachment", "title": name, "version": {"number": version},
                     "_links": {"download": f"/download/attachments/{page_id}/{name}?version={version}&api=v2",
                                "webui": f"/pages/viewpageattachments.action?pageId={page_id}"}}
                    for n, (name, version, _) in enumerate(self.pages[page_id].attachments)])
            if not pieces[1:]:
                answer = self.content(page_id)
                if "body.export_view" in query.get("expand", [""])[0]:
                    answer["body"] = {"export_view": {"value": self.pages[page_id].body, "representation": "view"}}
                return Reply.json(200, answer)
        if path.startswith("/wiki/download/attachments/"):
            _, _, _, _, page_id, name = path.split("/")
            if self.media:
                return Reply(302, headers={"Location": f"http://localhost:{self.port}/media/{page_id}/{name}?t=x"})
            for file, _, data in self.pages[page_id].attachments if page_id in self.pages else ():
                if file == name:
                    return Reply(200, data, {"Content-Type": "application/octet-stream"})
        return Reply.json(404, {"statusCode": 404, "message": "Not found"})

    def paths(self) -> list[str]:
        return [urlsplit(r.path).path for r in self.requests]


@pytest.fixture
def server() -> Iterator[ConfluenceServer]:
    with ConfluenceServer() as s:
        s.build()
        yield s


def reader(server: ConfluenceServer, waits: list[float] | None = None, token: str = TOKEN,
           **kw: Any) -> ConfluenceReader:
    env = {"CONFLUENCE_TOKEN": token, "CONFLUENCE_USER": USER}
    kw.setdefault("space", "OPS")
    return ConfluenceReader(server.base, env=env, sleep=(waits.append if waits is not None else lambda s: None),
                            page_size=50, **kw)


LISTED = ["Ops Home.html", "Ops Home/Runbooks.html", "Ops Home/Secrets.html", "Ops Home/Secrets/keys.txt",
          "Ops Home/A-B testing.html", "Ops Home/Runbooks (8).html", "Ops Home/Runbooks/Disk full.html",
          "Ops Home/Runbooks/Disk full/disk.md", "Ops Home/Secrets/Rotation.html"]


def test_a_space_lists_its_pages_by_their_ancestors_with_versions_links_meta_and_groups(
        server: ConfluenceServer) -> None:
    items = list(reader(server).items())

    assert [i.path for i in items] == LISTED
    by_path = {i.path: i for i in items}
    disk = by_path["Ops Home/Runbooks/Disk full.html"]
    assert (disk.version, disk.url) == ("4", f"{server.base}/spaces/OPS/pages/3")
    assert disk.meta == {"title": "Disk full", "page_id": "3", "version": "4", "author": "Ana Ops",
                         "when": "2026-11-04T10:00:00.000Z"}
    attachment = by_path["Ops Home/Runbooks/Disk full/disk.md"]
    assert (attachment.version, attachment.meta["page_id"], attachment.meta["attachment"]) == ("2", "3", "disk.md")
    # restrictions: a page's own groups; a child's are those its ancestor's and its own allow; attachments inherit
    assert {i.path: i.groups for i in items if i.groups} == {
        "Ops Home/Secrets.html": ("ops-admins", "sre"), "Ops Home/Secrets/keys.txt": ("ops-admins", "sre"),
        "Ops Home/Secrets/Rotation.html": ("sre",)}
    assert not any("Private notes" in i.path for i in items)  # named users only: no group may read it
    assert not any(i.path.endswith(".mp4") for i in items)   # not a type the loaders read

    seen = server.paths()
    assert seen[0] == "/wiki/rest/api/space/OPS"
    assert seen.count("/wiki/rest/api/content") == 4  # 8 pages, 2 at a time, by _links.next
    assert not any(p.startswith("/wiki/rest/api/content/") and p.count("/") == 5 for p in seen)  # no body fetched
    assert {r.header("authorization") for r in server.requests} == {f"Bearer {TOKEN}"}
    shown = json.dumps([[i.path, i.url, dict(i.meta), i.version] for i in items]) + reader(server).describe()
    assert TOKEN not in shown


def test_reading_a_page_gives_an_html_document_and_an_attachment_its_bytes(server: ConfluenceServer) -> None:
    from rag_core.loaders.load import load_bytes

    by_path = {i.path: i for i in reader(server).items()}
    item = by_path["Ops Home/Runbooks/Disk full.html"]
    document = load_bytes(item.read(), item.path)
    assert document.text.startswith("# Disk full") and "Restart the disk service first." in document.text
    assert "/wiki/rest/api/content/3" in server.paths()
    assert by_path["Ops Home/Runbooks/Disk full/disk.md"].read() == server.pages["3"].attachments[0][2]


def test_an_attachment_redirected_to_another_host_is_fetched_without_the_token(server: ConfluenceServer) -> None:
    server.media = True
    [item] = [i for i in reader(server).items() if i.path.endswith("keys.txt")]
    assert item.read() == b"Rotate the vault keys every quarter."
    first, media = server.requests[-2:]
    assert first.path.startswith("/wiki/download/attachments/4/keys.txt") and first.header("authorization")
    assert media.path.startswith("/media/4/keys.txt") and media.header("authorization") is None


def test_without_next_links_it_pages_by_size(server: ConfluenceServer) -> None:
    server.next_links = False
    assert [i.path for i in reader(server).items()] == LISTED
    # 8 pages, 2 at a time: the last full page cannot say it is the last, a fifth (empty) request does
    assert server.paths().count("/wiki/rest/api/content") == 5


def test_max_pages_and_an_ancestor_beyond_it_still_restricts(server: ConfluenceServer) -> None:
    items = list(reader(server, max_pages=4, attachments=False).items())  # listed: 8, 7, 6, 5
    assert [(i.path, i.groups) for i in items] == [
        ("Ops Home/A-B testing.html", ()), ("Ops Home/Runbooks.html", ()),
        ("Ops Home/Secrets/Rotation.html", ("sre",))]
    assert "/wiki/rest/api/content/4" in server.paths()  # the unlisted ancestor's restrictions, asked
    assert not any("attachment" in p for p in server.paths())


def test_basic_auth_with_a_user_and_a_wrong_token_is_one_line_without_it() -> None:
    with ConfluenceServer(user=USER) as server:
        server.build()
        assert len(list(reader(server, user_env="CONFLUENCE_USER").items())) == len(LISTED)
        basic = f"Basic {base64.b64encode(f'{USER}:{TOKEN}'.encode()).decode()}"
        assert server.requests[0].header("authorization") == basic

        server.requests.clear()
        with pytest.raises(SourceError) as raised:
            list(reader(server, token="wrong-token-42", user_env="CONFLUENCE_USER").items())
        message = one_line(raised.value)
        assert message.startswith(f"confluence {server.base} space OPS: HTTP 401 Unauthorized")
        assert "check the token in CONFLUENCE_TOKEN and the user in CONFLUENCE_USER" in message
        assert "wrong-token-42" not in message and USER not in message
        assert [r.header("authorization") for r in server.requests] == [
            f"Basic {base64.b64encode(f'{USER}:wrong-token-42'.encode()).decode()}"]


def test_a_wrong_bearer_token_and_a_missing_one(server: ConfluenceServer) -> None:
    with pytest.raises(SourceError, match="HTTP 401 Unauthorized from .*: check the token in CONFLUENCE_TOKEN$"):
        list(reader(server, token="nope").items())
    assert server.requests[-1].header("authorization") == "Bearer nope"
    with pytest.raises(SourceError, match="no token in the environment variable CONFLUENCE_OPS_PAT"):
        list(reader(server, token_env="CONFLUENCE_OPS_PAT").items())


def test_a_429_waits_what_retry_after_says(server: ConfluenceServer) -> None:
    server.busy = 1
    waits: list[float] = []
    assert [i.path for i in reader(server, waits).items()] == LISTED
    assert waits == [3.0] and server.paths().count("/wiki/rest/api/content") == 5

    server.busy, waits[:] = 10, []
    with pytest.raises(SourceError, match=r"rest/api/content\?.*: answered HTTP 429 Too Many Requests"):
        list(reader(server, waits).items())
    assert waits == [3.0, 3.0]  # two retries, then it gives up


def test_a_page_deleted_between_list_and_read_fails_that_item_only(server: ConfluenceServer) -> None:
    items = {i.path: i for i in reader(server).items()}
    server.gone.add("3")
    with pytest.raises(SourceError) as raised:
        items["Ops Home/Runbooks/Disk full.html"].read()
    assert one_line(raised.value).startswith("Ops Home/Runbooks/Disk full.html: page 3 is gone from Confluence")
    assert b"Welcome" in items["Ops Home.html"].read()


@pytest.mark.parametrize(("setup", "message"), [
    ("malformed", r"^http://127.0.0.1:\d+/wiki/rest/api/content\?.*: answered something that is not JSON"),
    ("unknown", r"^confluence http://127.0.0.1:\d+/wiki space NOPE: no such space \(HTTP 404\)"),
    ("hang", r"^http://127.0.0.1:\d+/wiki/rest/api/space/OPS: did not answer in time$"),
])
def test_a_space_that_cannot_be_listed_is_one_line(server: ConfluenceServer, setup: str, message: str) -> None:
    kw: dict[str, Any] = {}
    if setup == "malformed":
        server.malformed = True
    elif setup == "unknown":
        kw["space"] = "NOPE"
    else:
        server.script(Reply.json(200, {}, delay=30))
        kw["timeout"] = httpx.Timeout(0.5)
    with pytest.raises(SourceError, match=message) as raised:
        list(reader(server, **kw).items())
    one_line(raised.value)


def test_the_factory_reads_the_options_and_no_token() -> None:
    r = confluence_reader("https://example.atlassian.net/wiki/", {"space": "OPS", "token_env": "CONFLUENCE_PAT",
                                                                  "user-env": "CONFLUENCE_MAIL", "attachments": "no",
                                                                  "max-pages": "7"}, {})
    assert (r.base, r.space, r.token_env, r.user_env, r.attachments, r.max_pages) == (
        "https://example.atlassian.net/wiki", "OPS", "CONFLUENCE_PAT", "CONFLUENCE_MAIL", False, 7)
    assert r.describe() == "confluence https://example.atlassian.net/wiki space OPS"
    default = confluence_reader("https://c.example.org/rest/api", {"space": "OPS"})
    assert (default.base, default.token_env, default.user_env, default.attachments) == (
        "https://c.example.org", "CONFLUENCE_TOKEN", "", True)
    for options, refusal in [({}, "give the space's key"), ({"space": "A", "depth": "1"}, "unknown option depth"),
                             ({"space": "A", "attachments": "maybe"}, "attachments must be yes or no"),
                             ({"space": "A", "max-pages": "x"}, "max-pages must be a whole number"),
                             ({"space": "A", "token-env": "OPENAI_API_KEY"},
                              "token-env must name an environment variable starting with CONFLUENCE_"),
                             ({"space": "A", "user-env": "CONFLUENCE_"}, "user-env must name")]:
        with pytest.raises(SourceError, match=refusal):
            confluence_reader("https://c.example.org", options)
    with pytest.raises(SourceError) as raised:
        confluence_reader("https://ana:hunter2@c.example.org/wiki", {"space": "A"})
    assert "credentials in the URL" in str(raised.value) and "hunter2" not in str(raised.value)
    with pytest.raises(SourceError, match="not an http"):
        confluence_reader("c.example.org", {"space": "A"})


def test_a_source_added_is_named_by_its_space_and_reads_no_token(tmp_path: Any) -> None:
    from rag_core.config import load_settings
    from rag_core.sources.manage import needs_operator, new_source

    settings = load_settings(data_dir=tmp_path, env={}, config_file=None, overrides={})
    source = new_source(settings, "biz", "confluence", "https://example.atlassian.net/wiki",
                        {"space": "OPS", "user-env": "CONFLUENCE_USER"})  # no variable set: read when syncing
    assert (source.name, source.folder, source.options) == ("OPS", "OPS", {"space": "OPS",
                                                                           "user-env": "CONFLUENCE_USER"})
    assert needs_operator("confluence", source.location)  # it is sent the server's token: the operator's to add


class TestConfluenceReaderContract(SourceReaderContract):
    @pytest.fixture
    def reader(self, server: ConfluenceServer) -> ConfluenceReader:
        return reader(server)

    @pytest.fixture
    def broken(self, server: ConfluenceServer) -> tuple[ConfluenceReader, str]:
        server.gone.add("5")
        return reader(server), "Ops Home/Secrets/Rotation.html"

    @pytest.fixture
    def unreachable(self, server: ConfluenceServer) -> ConfluenceReader:
        return reader(server, space="NOPE")


# ---------------------------------------------------------------------------------------- through the sync
@pytest.fixture(scope="module")
def wb(tmp_path_factory: pytest.TempPathFactory, local_embedder: Any, milvus: None) -> Iterator[Any]:
    from bench.sources import Counting
    from tests.helpers import make_workbench

    wb = make_workbench(tmp_path_factory.mktemp("confluence-kb"), Counting(local_embedder))
    yield wb
    wb.close()


@pytest.mark.milvus
def test_three_syncs_add_replace_only_the_bumped_page_and_delete_the_removed_one(
        server: ConfluenceServer, wb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from rag_core.files import FileLock
    from rag_core.sources.book import Source, SourceBook
    from rag_core.sources.manage import reader_of, sync_source
    from rag_core.store.kept import MemoryDocument

    monkeypatch.setenv("CONFLUENCE_TOKEN", TOKEN)
    book = SourceBook(MemoryDocument(), FileLock(None), None)
    book.add(Source("ops", "biz", "confluence", server.base, "ops", {"space": "OPS"}))

    def sync() -> dict[str, Any]:
        server.requests.clear()
        return sync_source(wb.settings, book, book.get("ops"), wb.ingestor).to_dict()

    def documents() -> list[str]:
        return sorted(d.doc_id for d in wb.store.list_documents() if d.doc_id.startswith("ops/"))

    first = sync()
    assert (first["added"], first["failed"], first["ok"]) == (len(LISTED), 0, True)
    assert documents() == sorted(f"ops/{p}" for p in LISTED)
    assert wb.store.labels.tags("ops/Ops Home/Runbooks/Disk full.html") == {
        "source": ["ops"], "source_url": [f"{server.base}/spaces/OPS/pages/3"]}
    kept = book.get("ops").indexed["Ops Home/Runbooks/Disk full.html"]
    assert (kept["version"], kept["meta"]["author"]) == ("4", "Ana Ops") and TOKEN not in json.dumps(kept)

    server.pages["3"].version = 5
    server.pages["3"].body = "<p>Page the on-call before restarting the disk service.</p>"
    embedded = wb.embedder.embedded
    second = sync()
    assert second["changes"] == {"added": [], "replaced": ["ops/Ops Home/Runbooks/Disk full.html"], "deleted": []}
    assert second["unchanged"] == len(LISTED) - 1 and wb.embedder.embedded > embedded
    bodies = [p for p in server.paths() if p.startswith("/wiki/rest/api/content/") and p.count("/") == 5]
    assert bodies == ["/wiki/rest/api/content/3"]  # only the bumped page was fetched
    assert not any(p.startswith("/wiki/download/") for p in server.paths())  # nor any attachment

    del server.pages["7"]
    third = sync()
    assert third["changes"] == {"added": [], "replaced": [], "deleted": ["ops/Ops Home/A-B testing.html"]}
    assert "ops/Ops Home/A-B testing.html" not in documents()

    # the restricted pages' items carry their groups (the sync's `access` tag is made from them elsewhere)
    groups = {i.path: i.groups for i in reader_of(wb.settings, book.get("ops")).items() if i.groups}
    assert groups == {"Ops Home/Secrets.html": ("ops-admins", "sre"),
                      "Ops Home/Secrets/keys.txt": ("ops-admins", "sre"), "Ops Home/Secrets/Rotation.html": ("sre",)}
