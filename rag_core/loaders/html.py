"""HTML -> Markdown: the page's main content only, headings as `#` headings, tables as Markdown tables that
keep their header row, lists as lists, links as their text.

Parsed with lxml (already a dependency of python-docx) and converted here; measured against trafilatura,
readability-lxml (+ markdownify / html2text), html2text, markdownify, inscriptis and resiliparse on a
Confluence export, a MkDocs page and a MediaWiki page with an 80-row table: trafilatura dropped the Confluence
table's header row and kept "¶" / "[edit]" in headings, readability dropped the wiki table, the others kept
navigation and footers or lost headings (see bench/formats.py).

The main content is, in order: a Confluence export's `#main-content`, MediaWiki's `.mw-parser-output`,
the page's `<article>` or `[role=main]` or `<main>`, else the body. Inside it, navigation, headers, footers,
forms, scripts, styles, hidden elements and blocks named like boilerplate (`toc`, `breadcrumb`, `editsection`,
`headerlink`, ...) are dropped. A table longer than `TABLE_BLOCK_CHARS` is written as several Markdown tables,
each starting with the header row, so a chunk of it still says what its columns are.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import LoaderError
from .extracted import Extracted, Format, clean_extracted, reason
from .limits import TextBudget
from .options import LoadOptions
from .text import decode_text

TABLE_BLOCK_CHARS = 500  # a table block (header row + rows) stays under this, so two fit an 800-character chunk
MAX_DEPTH = 2000  # lxml (huge_tree) stops nesting at 2,047 and drops what lies deeper: refuse instead
_SCRIPT_SHARE = 0.5  # script/style bytes above this share and next to no text: an app shell, not a page

_DROP_TAGS = frozenset({
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "nav", "header",
    "footer", "aside", "form", "button", "input", "select", "textarea", "label", "head", "title", "meta", "link",
    "dialog", "menu",
})
_DROP_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "complementary", "dialog", "menu"})
_BOILERPLATE = frozenset({
    "nav", "navbar", "navigation", "menu", "sidebar", "breadcrumb", "breadcrumbs", "footer", "toc", "toctitle",
    "editsection", "headerlink", "permalink", "printfooter", "catlinks", "noprint", "skip", "jump", "cookie",
    "cookies", "banner", "share", "social", "button", "btn", "metadata", "pagination", "pager", "advert", "ads",
})
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_BLOCKS = frozenset({
    "p", "div", "section", "article", "main", "body", "html", "blockquote", "figure", "figcaption", "address",
    "details", "summary", "center", "fieldset", "hgroup", "caption", "dd", "dt", "header",
})
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.IGNORECASE)
_CONFLUENCE_TITLE = re.compile(r"^[^:]{1,60}\s:\s+")  # "OPS : Page title" (the space key first)
_TOKEN_SPLIT = re.compile(r"[\s_\-]+")
_WS = re.compile(r"\s+")


def html_text(data: bytes, name: str, _ext: str, budget: TextBudget, _options: LoadOptions) -> Extracted:
    """An HTML page's main content as Markdown, and the encoding it was decoded from; refuses a page with no text, or
    one that is an app shell."""
    import lxml.html
    from lxml import etree

    text, encoding = _decode(data, name)
    try:
        parser = lxml.html.HTMLParser(huge_tree=True, remove_comments=True, remove_pis=True)
        root = lxml.html.document_fromstring(text, parser=parser)
    except (etree.ParserError, ValueError) as exc:
        if "empty" in str(exc).lower():
            raise LoaderError(f"{name}: the HTML page has no content; nothing to index", code="empty") from None
        raise LoaderError(f"{name}: could not read the HTML page ({reason(exc)}); save it again from the "
                          "browser or the wiki", code="undecodable") from None
    _check_depth(root, name)
    script = sum(len(e.text or "") for e in root.iter("script", "style"))
    main, title = _main_content(root)
    markdown = clean_extracted(_Converter(budget).convert(main, title))
    markdown = re.sub(r"\n{3,}", "\n\n", markdown).strip()
    words = len(markdown)
    if words == 0 or (words < 200 and script > _SCRIPT_SHARE * max(1, len(text))):
        if script > _SCRIPT_SHARE * max(1, len(text)):
            raise LoaderError(
                f"{name}: the page is {script * 100 // max(1, len(text))}% script and shows no text of its own (an app "
                "that draws itself in the browser); open it in a browser and save it after it has loaded, or "
                "export it as PDF", code="empty")
        raise LoaderError(f"{name}: the HTML page has no text in its main content; nothing to index", code="empty")
    return Extracted(markdown, encoding)


FORMAT = Format(("html", "htm"), html_text)


def _decode(data: bytes, name: str) -> tuple[str, str]:
    """The page's text: a byte-order mark, else the charset its <meta> declares when the bytes decode strictly
    with it, else as a text file (UTF-8, then the legacy encodings, refusing binary data)."""
    if not data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        declared = _META_CHARSET.search(data[:4096])
        if declared:
            codec = declared.group(1).decode("ascii").lower()
            codec = {"gb2312": "gb18030", "gbk": "gb18030", "x-gbk": "gb18030", "big5": "cp950"}.get(codec, codec)
            try:
                return data.decode(codec).replace("\r\n", "\n").replace("\r", "\n"), codec
            except (LookupError, UnicodeDecodeError):
                pass  # a wrong declaration is common: detect instead
    return decode_text(data, name)


def _check_depth(root: object, name: str) -> None:
    stack = [(root, 0)]
    while stack:
        element, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise LoaderError(f"{name}: the HTML nests elements more than {MAX_DEPTH:,} deep, which no page a person "
                              "reads does; it may be generated junk. Save the page again or export it as PDF",
                              code="undecodable")
        stack.extend((child, depth + 1) for child in element)  # type: ignore[attr-defined]


def _classes(element: object) -> set[str]:
    get = element.get  # type: ignore[attr-defined]
    raw = f"{get('class') or ''} {get('id') or ''}".lower()
    return set(_TOKEN_SPLIT.split(raw)) - {""}


def _main_content(root: object) -> tuple[object, str]:
    """The element holding the main content, and a title to put first when that element has no <h1>."""
    find = root.xpath  # type: ignore[attr-defined]
    candidates = (
        "//*[@id='main-content' and contains(concat(' ', @class, ' '), ' wiki-content ')]",
        "//*[contains(concat(' ', @class, ' '), ' wiki-content ')]",
        "//*[@id='mw-content-text']//*[contains(concat(' ', @class, ' '), ' mw-parser-output ')]",
        "//*[@id='mw-content-text']",
        "//article", "//*[@role='main']", "//main", "//*[@id='content']", "//body",
    )
    main = root
    for xpath in candidates:
        found = find(xpath)
        if found:
            main = max(found, key=lambda e: len(e.text_content())) if xpath == "//article" else found[0]
            break
    if main.xpath(".//h1"):  # type: ignore[attr-defined]
        return main, ""
    heading = [h for h in find("//h1") if h.text_content().strip()]
    title = _WS.sub(" ", heading[0].text_content()).strip() if heading else ""
    if not title:
        titles = find("//title")
        title = _WS.sub(" ", titles[0].text_content()).strip() if titles else ""
    if find("//*[@id='main-content' and contains(concat(' ', @class, ' '), ' wiki-content ')]"):
        title = _CONFLUENCE_TITLE.sub("", title)
    return main, title


@dataclass(frozen=True)
class _Main:
    element: object
    chars: int  # characters of text in it: a block named like boilerplate that holds half of it is content


def _dropped(element: object, main: _Main) -> bool:
    tag = element.tag if isinstance(element.tag, str) else ""  # type: ignore[attr-defined]
    if element is main.element:
        return False
    if tag in _DROP_TAGS:
        # An article's own <header> holds its title: kept when it has a heading.
        return not (tag == "header" and element.xpath(".//h1|.//h2|.//h3"))  # type: ignore[attr-defined]
    get = element.get  # type: ignore[attr-defined]
    if (get("role") or "").lower() in _DROP_ROLES or get("hidden") is not None or get("aria-hidden") == "true":
        return True
    if re.search(r"display\s*:\s*none", get("style") or "", re.IGNORECASE):
        return True
    if tag in _HEADINGS or tag in ("table", "pre", "ul", "ol") or not _classes(element) & _BOILERPLATE:
        return False
    return 2 * len(element.text_content()) < main.chars  # type: ignore[attr-defined]


class _Converter:
    """Walks the main content and writes Markdown blocks. Iterative (a page nested 2,000 deep must not blow the
    stack); counts characters against the budget as it goes."""

    def __init__(self, budget: TextBudget) -> None:
        self.budget = budget
        self.blocks: list[str] = []
        self.main = _Main(None, 0)

    def convert(self, main: object, title: str) -> str:
        self.main = _Main(main, len(main.text_content()))  # type: ignore[attr-defined]
        if title:
            self._emit("# " + title)
        self._block(main)
        return "\n\n".join(self.blocks)

    def _emit(self, block: str) -> None:
        if block.strip():
            self.budget.add(len(block) + 2)
            self.blocks.append(block)

    # --- blocks -------------------------------------------------------------------------------
    def _block(self, element: object) -> None:
        """Emit the blocks of `element`: inline runs become paragraphs, block children their own blocks."""
        stack: list[tuple[str, object]] = [("node", element)]
        run: list[str] = []  # inline text gathered for the current paragraph

        def flush() -> None:
            text = _WS.sub(" ", "".join(run)).strip()
            run.clear()
            if text:
                self._emit(text)

        while stack:
            kind, item = stack.pop()
            if kind == "text":
                run.append(item)  # type: ignore[arg-type]
                continue
            if kind == "flush":
                flush()
                continue
            node = item
            tag = node.tag if isinstance(node.tag, str) else ""  # type: ignore[attr-defined]
            if node is not element and _dropped(node, self.main):
                continue
            special = self._special.get(tag) if node is not element else None
            if special is not None:
                flush()
                special(self, node)
                continue
            if tag == "hr":
                flush()
                continue
            if node is not element and tag not in _BLOCKS:
                run.append(_inline(node, self.main))
                continue
            flush()  # a block: its text and children, then its end closes the paragraph
            pushes: list[tuple[str, object]] = [("text", node.text)] if node.text else []  # type: ignore[attr-defined]
            for child in node:  # type: ignore[attr-defined]
                pushes.append(("node", child))
                if child.tail:
                    pushes.append(("text", child.tail))
            pushes.append(("flush", None))
            stack.extend(reversed(pushes))
        flush()

    def _heading(self, node: object) -> None:
        text = _WS.sub(" ", _inline(node, self.main)).strip()
        if text:
            self._emit("#" * _HEADINGS[node.tag] + " " + text)  # type: ignore[attr-defined]

    def _list(self, node: object) -> None:
        self._emit("\n".join(self._list_lines(node, 0)))  # one block: a blank line would make items paragraphs

    def _list_lines(self, node: object, depth: int) -> list[str]:
        ordered = node.tag == "ol"  # type: ignore[attr-defined]
        start = node.get("start") or ""  # type: ignore[attr-defined]
        number = int(start) if ordered and start.isdigit() else 1
        lines: list[str] = []
        for item in node:  # type: ignore[attr-defined]
            if not isinstance(item.tag, str) or item.tag != "li" or _dropped(item, self.main):
                continue
            marker = f"{number}. " if ordered else "- "
            number += 1
            nested = [
                c for c in item if isinstance(c.tag, str) and c.tag in ("ul", "ol") and not _dropped(c, self.main)
            ]
            text = _WS.sub(" ", _inline(item, self.main, skip=nested)).strip()
            if text:
                lines.append("   " * depth + marker + text)
            for sub in nested:
                lines += self._list_lines(sub, depth + 1)
        return lines

    def _definitions(self, node: object) -> None:
        lines, term = [], ""
        for child in node:  # type: ignore[attr-defined]
            if not isinstance(child.tag, str) or _dropped(child, self.main):
                continue
            text = _WS.sub(" ", _inline(child, self.main)).strip()
            if child.tag == "dt":
                if term:
                    lines.append(term)
                term = text
            elif child.tag == "dd" and text:
                lines.append(f"{term}: {text}" if term else text)
                term = ""
        if term:
            lines.append(term)
        for line in lines:
            self._emit(line)

    def _pre(self, node: object) -> None:
        code = "".join(node.itertext()).strip("\n")  # type: ignore[attr-defined]
        if not code.strip():
            return
        fence = "```"
        while fence in code:
            fence += "`"
        self._emit(f"{fence}\n{code}\n{fence}")

    def _table(self, node: object) -> None:
        """The first row is the header (Markdown needs one: a <thead>, a row of <th>, or else the first row)."""
        rows: list[list[str]] = []
        for tr in _rows(node):
            cells: list[str] = []
            for cell in tr:  # type: ignore[attr-defined]
                if not isinstance(cell.tag, str) or cell.tag not in ("td", "th"):
                    continue
                text = _WS.sub(" ", _inline(cell, self.main)).strip().replace("|", "\\|")
                span = cell.get("colspan") or "1"
                cells += [text] + [""] * (min(int(span), 50) - 1 if span.isdigit() else 0)
            if any(cells):
                rows.append(cells)
        if not rows:
            return
        width = max(len(r) for r in rows)
        if width == 1 or len(rows) == 1:  # a layout table: its cells are paragraphs
            for r in rows:
                self._emit(" · ".join(c for c in r if c))
            return
        rows = [r + [""] * (width - len(r)) for r in rows]
        for block in table_blocks(rows[0], rows[1:]):
            self._emit(block)

    _special = {**dict.fromkeys(_HEADINGS, _heading), "ul": _list, "ol": _list, "table": _table, "pre": _pre,
                "dl": _definitions}


def table_blocks(header: list[str], rows: list[list[str]], limit: int = TABLE_BLOCK_CHARS) -> Iterator[str]:
    """A table as Markdown tables of at most `limit` characters (a longer row stands alone), each starting with
    the header row. PDF tables are written the same way (loaders.pdf)."""
    head = "| " + " | ".join(header) + " |\n|" + "---|" * len(header)
    block: list[str] = []
    size = len(head)
    for row in rows:
        line = "| " + " | ".join(row) + " |"
        if block and size + 1 + len(line) > limit:
            yield head + "\n" + "\n".join(block)
            block, size = [], len(head)
        block.append(line)
        size += 1 + len(line)
    if block or not rows:
        yield head + ("\n" + "\n".join(block) if block else "")


def _rows(table: object) -> list[object]:
    """The table's rows in order (thead, tbody, tfoot or directly), not those of tables nested in its cells."""
    found = []
    for child in table:  # type: ignore[attr-defined]
        if not isinstance(child.tag, str):
            continue
        if child.tag == "tr":
            found.append(child)
        elif child.tag in ("thead", "tbody", "tfoot"):
            found += [tr for tr in child if isinstance(tr.tag, str) and tr.tag == "tr"]
    return found


def _inline(node: object, main: _Main, skip: list[object] | None = None) -> str:
    """The text of an element as one run: links as their text, `code` in backticks, line breaks as spaces,
    dropped elements (and `skip`) left out. Iterative, like the converter."""
    out: list[str] = []
    stack: list[object] = [node]
    skipped = set(map(id, skip or ()))
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        tag = item.tag if isinstance(item.tag, str) else ""  # type: ignore[attr-defined]
        if item is not node and (id(item) in skipped or _dropped(item, main)):
            if item.tail:  # type: ignore[attr-defined]
                out.append(item.tail)  # type: ignore[attr-defined]
            continue
        tail = item.tail if item is not node else None  # type: ignore[attr-defined]
        pushes: list[object] = []
        if tag == "br":
            pushes.append(" ")
        elif tag == "code" and not len(item):  # type: ignore[arg-type]
            code = _WS.sub(" ", item.text or "").strip()  # type: ignore[attr-defined]
            pushes.append(f"`{code}`" if code else "")
        else:
            if tag in _BLOCKS or tag in ("li", "td", "th", "tr"):
                pushes.append(" ")
            if item.text:  # type: ignore[attr-defined]
                pushes.append(item.text)  # type: ignore[attr-defined]
            pushes.extend(item)  # type: ignore[arg-type]
        if tail:
            pushes.append(tail)
        stack.extend(reversed(pushes))
    return "".join(out)
