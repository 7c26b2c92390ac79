"""The `notion-export` and `confluence-export` sources (issue 38): the zip exports both products make, read offline.

The location is the .zip, or the folder it was unzipped into. An entry's `version` is its CRC-32 and size in a zip
(its size and mtime in a folder), so an unchanged page is skipped without being read; an entry whose CRC no longer
matches when it is read (the zip was replaced) is refused, so what the sync indexes is what it listed.

- Notion ("Markdown & CSV" export): pages are `Title <32-hex id>.md`, a page's sub-pages and attachments sit in the
  folder `Title <id>/`, databases are `Title <id>.csv`. Each page, database and attachment of a type the loaders
  read is an item, named by its path with the ids removed (`Parent/Child.md`); of two pages whose names would then
  be the same, the later (in the export's sorted order) keeps its id.
- Confluence ("HTML" space export): `index.html` and one `Title_<page id>.html` (or `<page id>.html`) per page,
  whose breadcrumbs give its ancestors; attachments in `attachments/<page id>/`. Each page is an item named by its
  ancestors' titles as folders and its title (`Parent/Child.html`), its attachments of a type the loaders read under
  its folder (`Parent/Child/diagram.png`). Listing reads every page for its breadcrumbs (local and cheap).

Both take `include`/`exclude` globs on those paths, as a folder does.
"""

from __future__ import annotations

import fnmatch
import os
import re
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import SourceError
from ..loaders.formats import SUPPORTED_EXTENSIONS
from .records import SourceItem

# A guard against a zip bomb (an entry's declared size bounds what is read); ingest applies its own size limit.
MAX_ENTRY_BYTES = 512 * 1024 * 1024
_NOTION_NAME = re.compile(r"^(?P<title>.*?)\s*(?P<id>[0-9a-f]{32})(?P<rest>(?:_all)?(?:\.[^./]+)?)$")
_CONFLUENCE_PAGE = re.compile(r"^(?:.*_)?(?P<id>\d+)\.html$")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _supported(name: str) -> bool:
    return os.path.splitext(name)[1][1:].lower() in SUPPORTED_EXTENSIONS


class _Entry(NamedTuple):
    name: str      # "/"-separated path inside the export
    version: str


class _Export:
    """The files of an export, in a zip or an unzipped folder: listed with their versions, read one by one."""

    def __init__(self, location: str, product: str) -> None:
        self.path = Path(location).expanduser()
        self.product = product
        self._zip: zipfile.ZipFile | None = None
        self._zip_stat: tuple[int, int] | None = None

    def describe(self) -> str:
        return f"{self.product} export {self.path}"

    def _open_zip(self) -> zipfile.ZipFile:
        """The zip, opened again when the file changed since it was last opened."""
        st = self.path.stat()
        if self._zip is None or self._zip_stat != (st.st_size, st.st_mtime_ns):
            if self._zip is not None:
                self._zip.close()
            self._zip = zipfile.ZipFile(self.path)
            self._zip_stat = (st.st_size, st.st_mtime_ns)
        return self._zip

    def entries(self) -> list[_Entry]:
        """Every file (hidden ones and macOS's __MACOSX left out), sorted; SourceError when there is no export."""
        if self.path.is_dir():
            found = []
            for folder, dirs, files in os.walk(self.path):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                for file in files:
                    full = Path(folder, file)
                    if file.startswith(".") or full.is_symlink() or not full.is_file():  # no link out of it
                        continue
                    try:
                        st = full.stat()
                        version = f"{st.st_size}:{st.st_mtime_ns}"
                    except OSError as exc:
                        version = f"unreadable:{exc.strerror}"
                    found.append(_Entry(full.relative_to(self.path).as_posix(), version))
            return sorted(found)
        try:
            infos = self._open_zip().infolist()
        except FileNotFoundError:
            raise SourceError(f"{self.describe()}: no such file; check the path") from None
        except zipfile.BadZipFile:
            raise SourceError(f"{self.describe()}: not a zip file; give the .zip the product exported") from None
        except OSError as exc:
            raise SourceError(f"{self.describe()}: cannot be read ({exc.strerror or exc})") from None
        return sorted(_Entry(i.filename, f"{i.CRC:08x}:{i.file_size}") for i in infos
                      if not i.is_dir() and not _left_out(i.filename))

    def read(self, entry: _Entry, item_path: str) -> bytes:
        """The entry's bytes; SourceError naming `item_path` when it cannot be read or changed since it was listed."""
        try:
            if self.path.is_dir():
                return (self.path / entry.name).read_bytes()
            archive = self._open_zip()
            info = archive.getinfo(entry.name)
            if f"{info.CRC:08x}:{info.file_size}" != entry.version:
                raise SourceError(f"{item_path}: changed in {self.path.name} since it was listed; sync again")
            if info.file_size > MAX_ENTRY_BYTES:
                raise SourceError(f"{item_path}: {info.file_size // 2**20} MB unpacked, over the "
                                  f"{MAX_ENTRY_BYTES // 2**20} MB an export's entry may have; not read")
            return archive.read(info)
        except KeyError:
            raise SourceError(f"{item_path}: no longer in {self.path.name} ({entry.name}); sync again") from None
        except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, NotImplementedError, OSError) as exc:
            raise SourceError(f"{item_path}: entry {entry.name} of {self.path.name} cannot be read "
                              f"({_one_line(exc)})") from None


def _left_out(name: str) -> bool:
    """Hidden entries, macOS's __MACOSX, and names that are not a plain relative path ("/x", "a/../b", "a\\b")."""
    return "\\" in name or any(part.startswith(".") or part in ("", "__MACOSX") for part in name.split("/"))


def _item(export: _Export, entry: _Entry, path: str, meta: Mapping[str, str], url: str = "") -> SourceItem:
    def read() -> bytes:
        return export.read(entry, path)
    return SourceItem(path, read, version=entry.version, url=url, meta=dict(meta))


class _ExportReader:
    """What both readers share: the export, and the `include`/`exclude` globs on an item's path (fnmatch, as a
    folder's: `*` crosses "/")."""

    product = ""

    def __init__(self, location: str, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> None:
        self.export = _Export(location, self.product)
        self.include, self.exclude = tuple(include), tuple(exclude)

    def describe(self) -> str:
        return self.export.describe()

    def items(self) -> Iterator[SourceItem]:
        for item in self._all():
            if self.include and not any(fnmatch.fnmatchcase(item.path, g) for g in self.include):
                continue
            if not any(fnmatch.fnmatchcase(item.path, g) for g in self.exclude):
                yield item

    def _all(self) -> Iterator[SourceItem]:
        raise NotImplementedError


class NotionExportReader(_ExportReader):
    """The SourceReader of a Notion "Markdown & CSV" export; `meta` is {"notion_id": the page's id} (an
    attachment's: the page it belongs to), `url` is "" (an export has no live link)."""

    product = "Notion"

    def _all(self) -> Iterator[SourceItem]:
        entries = self.export.entries()
        if not any(_is_notion_page(e.name) for e in entries):
            if entries and all(e.name.lower().endswith(".zip") for e in entries):  # a large export: zips in a zip
                raise SourceError(f"{self.describe()}: holds zips, not pages; give the .zip inside it, or unzip "
                                  "them all into one folder and give the folder")
            raise SourceError(f"{self.describe()}: not a Notion export (no pages named 'Title <id>.md'); "
                              "export as Markdown & CSV")
        decided: dict[tuple[str, str], str] = {}   # (original folder, id) -> the title it is listed under
        taken: dict[tuple[str, str], str] = {}     # (original folder, title) -> the id holding it
        seen: set[str] = set()
        for entry in entries:
            if not _supported(entry.name):
                continue
            human: list[str] = []
            notion_id = ""
            parts = entry.name.split("/")
            for depth, part in enumerate(parts):
                match = _NOTION_NAME.match(part)
                if not match:
                    human.append(part)
                    continue
                notion_id = match["id"]
                folder = "/".join(parts[:depth])
                key = (folder, notion_id)
                if key not in decided:
                    title = match["title"] or notion_id
                    holder = taken.setdefault((folder, title), notion_id)
                    decided[key] = title if holder == notion_id else f"{title} {notion_id}"
                human.append(decided[key] + match["rest"])
            path = "/".join(human)
            if path in seen:       # a name that is the same without ids anyway (two attachments): keep the original
                path = entry.name
            seen.add(path)
            yield _item(self.export, entry, path, {"notion_id": notion_id} if notion_id else {})


def _is_notion_page(name: str) -> bool:
    match = _NOTION_NAME.match(name.rsplit("/", 1)[-1])
    return bool(match and match["rest"].lower() == ".md")


class _ConfluencePage(HTMLParser):
    """A Confluence export page's title and breadcrumbs [(href, text)]."""

    def __init__(self) -> None:
        super().__init__()
        self.crumbs: list[tuple[str, str]] = []
        self.title_text = ""
        self.head_title = ""
        self._in: str = ""          # "crumbs", "title-text", "title"
        self._depth = 0             # open <ol> inside the breadcrumbs
        self._href: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        if tag == "ol" and (self._in == "crumbs" or attr.get("id") == "breadcrumbs"):
            self._in, self._depth = "crumbs", self._depth + 1
        elif self._in == "crumbs" and tag == "a":
            self._href, self._text = attr.get("href") or "", []
        elif not self._in and tag == "span" and attr.get("id") == "title-text":
            self._in, self._text = "title-text", []
        elif not self._in and tag == "title":
            self._in, self._text = "title", []

    def handle_endtag(self, tag: str) -> None:
        if self._in == "crumbs" and tag == "a" and self._href is not None:
            self.crumbs.append((self._href, " ".join("".join(self._text).split())))
            self._href = None
        elif self._in == "crumbs" and tag == "ol":
            self._depth -= 1
            if not self._depth:
                self._in = ""
        elif self._in == "title-text" and tag == "span":
            self.title_text, self._in = " ".join("".join(self._text).split()), ""
        elif self._in == "title" and tag == "title":
            self.head_title, self._in = " ".join("".join(self._text).split()), ""

    def handle_data(self, data: str) -> None:
        if self._in in ("title-text", "title") or self._href is not None:
            self._text.append(data)


def title_segment(title: str, fallback: str) -> str:
    """A title as one path segment: no "/" or "\\", not empty, not "." or ".."."""
    text = " ".join(title.replace("/", "-").replace("\\", "-").split())
    return fallback if text in ("", ".", "..") else text


class ConfluenceExportReader(_ExportReader):
    """The SourceReader of a Confluence space exported as HTML; `meta` is {"confluence_page_id", "title"} (an
    attachment's: of its page), `url` is "" (an export has no live link)."""

    product = "Confluence"

    def _all(self) -> Iterator[SourceItem]:
        entries = self.export.entries()
        indexes = sorted((e.name for e in entries if e.name.rsplit("/", 1)[-1] == "index.html"),
                         key=lambda n: (n.count("/"), n))
        if not indexes:
            raise SourceError(f"{self.describe()}: not a Confluence export (no index.html); export the space as HTML")
        root = indexes[0][: -len("index.html")]          # "SPACE/" or ""
        pages: dict[str, tuple[_Entry, str, list[tuple[str, str]]]] = {}   # page id -> (entry, title, crumbs)
        titles: dict[str, str] = {}                            # a page's file name -> its title
        attachments: list[tuple[_Entry, str, str]] = []        # (entry, page id, file name)
        for entry in entries:
            if not entry.name.startswith(root):
                continue
            rel = entry.name[len(root):]
            parts = rel.split("/")
            match = _CONFLUENCE_PAGE.match(rel)
            if len(parts) == 1 and match:
                title, crumbs = self._title_and_crumbs(entry, rel, match["id"])
                pages[match["id"]] = (entry, title, crumbs)
                titles[rel] = title
            elif len(parts) == 3 and parts[0] == "attachments" and _supported(parts[2]):
                attachments.append((entry, parts[1], parts[2]))
        seen: set[str] = set()
        folders: dict[str, str] = {}                           # page id -> its folder (ancestors + title)
        for page_id, (entry, title, crumbs) in sorted(pages.items(), key=lambda p: p[1][0].name):
            # an ancestor by its own page's title where it is in the export (so its folder is its path's), else
            # by the breadcrumb's text
            ancestors = [title_segment(titles.get(file, text), "untitled") for file, text in crumbs]
            folder = "/".join([*ancestors, title_segment(title, page_id)])
            path = f"{folder}.html"
            if path in seen:       # two pages of one title under one parent: the later gets its id
                folder = f"{folder} ({page_id})"
                path = f"{folder}.html"
            seen.add(path)
            folders[page_id] = folder
            yield _item(self.export, entry, path, {"confluence_page_id": page_id, "title": title})
        for entry, page_id, file in attachments:
            if page_id not in folders:     # an attachment of no page in the export
                continue
            path = f"{folders[page_id]}/{title_segment(file, 'attachment')}"
            if path in seen:
                continue
            seen.add(path)
            yield _item(self.export, entry, path, {"confluence_page_id": page_id, "title": pages[page_id][1]})

    def _title_and_crumbs(self, entry: _Entry, file: str, page_id: str) -> tuple[str, list[tuple[str, str]]]:
        """The page's title and its breadcrumbs (file name, text), the space's index.html left out; a page
        that cannot be read or parsed is at the top, titled by its file name (its read fails again in the sync)."""
        fallback = file[: -len(".html")].removesuffix(page_id).rstrip("_").replace("_", " ") or page_id
        try:
            html = self.export.read(entry, file).decode("utf-8", errors="replace")
        except SourceError:
            return fallback, []
        parser = _ConfluencePage()
        try:
            parser.feed(html)
            parser.close()
        except Exception:   # a malformed page: its file name still names it
            return fallback, []
        title = parser.title_text or parser.head_title
        if " : " in title:   # "Space name : Page title"
            title = title.split(" : ", 1)[1]
        crumbs = [(href.rsplit("/", 1)[-1], text) for href, text in parser.crumbs]
        return title.strip() or fallback, [(f, text) for f, text in crumbs if f not in ("index.html", file)]


def _options(kind: str, location: str, options: Mapping[str, Any]) -> dict[str, Sequence[str]]:
    unknown = sorted(set(options) - {"include", "exclude"})
    if unknown:
        raise SourceError(f"{kind} source {location}: unknown option {unknown[0]} (include, exclude)")
    return {k: _globs(options.get(k)) for k in ("include", "exclude")}


def _globs(value: Any) -> tuple[str, ...]:
    if not value:
        return ()
    return (value,) if isinstance(value, str) else tuple(str(v) for v in value)


def notion_export(location: str, options: Mapping[str, Any], known: Mapping[str, str] | None = None, *,
                  cache_dir: Path | None = None) -> NotionExportReader:
    """The reader of `sources add KB notion-export EXPORT.zip [--include G --exclude G]` (`known` and the cache
    unused: the versions are in the zip)."""
    return NotionExportReader(location, **_options("notion-export", location, options))


def confluence_export(location: str, options: Mapping[str, Any], known: Mapping[str, str] | None = None, *,
                      cache_dir: Path | None = None) -> ConfluenceExportReader:
    """The reader of `sources add KB confluence-export EXPORT.zip [--include G --exclude G]` (`known` and the cache
    unused: the versions are in the zip)."""
    return ConfluenceExportReader(location, **_options("confluence-export", location, options))
