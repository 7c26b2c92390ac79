"""What .docx, .xlsx and .pptx share: they are ZIP packages of XML parts, checked before a parser sees them.

A package is refused when it is not a ZIP, when it holds more parts than any Office file does, when its XML
parts expand (as the ZIP declares them: zipfile never inflates a member past its declared size) to more markup
than the text limit allows (a zip bomb), or when an XML part declares a document type (`<!DOCTYPE`): Office
never writes one, and internal entities are how an XML bomb ("billion laughs") expands a few KB to gigabytes.
"""

from __future__ import annotations

import io
import re
import zipfile

from ..errors import LoaderError
from .limits import TextBudget, markup_limit, too_much_markup

MAX_PARTS = 20_000  # a 2,000-slide deck or a workbook of 1,000 sheets stays well below
_PROLOG_BYTES = 64 * 1024
_ROOT_START = re.compile(rb"<[A-Za-z_]")
_DOCTYPE = re.compile(rb"<!DOCTYPE|<!ENTITY", re.IGNORECASE)


def open_package(data: bytes, name: str, budget: TextBudget, kind: str) -> zipfile.ZipFile:
    """The package as an open ZipFile, after the checks above. `kind` names the format in messages ("Excel
    workbook")."""
    try:
        package = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise LoaderError(f"{name}: is not a valid {kind} (it is a ZIP package, and this is not one, or it is "
                          "damaged); open it and save it again", code="unsupported") from None
    infos = package.infolist()
    if len(infos) > MAX_PARTS:
        raise LoaderError(f"{name}: the package holds {len(infos):,} parts, more than the {MAX_PARTS:,} any {kind} "
                          "has; it is not a real Office file", code="undecodable")
    xml = [i for i in infos if i.filename.endswith((".xml", ".rels", ".vml"))]
    declared = sum(i.file_size for i in xml)
    if declared > markup_limit(budget.limit):
        raise too_much_markup(name, "its XML", declared, budget.limit)
    for info in xml:
        with package.open(info) as part:
            head = part.read(_PROLOG_BYTES)
        root = _ROOT_START.search(head)
        prolog = head[:root.start()] if root else head
        if _DOCTYPE.search(prolog):
            article = "an" if kind[0] in "AEIOU" else "a"
            raise LoaderError(f"{name}: its part {info.filename} declares an XML document type (<!DOCTYPE>), which "
                              f"{article} {kind} never does; it may be an XML bomb, so it is not read",
                              code="undecodable")
    return package


def count_text(package: zipfile.ZipFile, part: str, tags: frozenset[str], budget: TextBudget) -> None:
    """Count the characters of `part`'s text elements (`tags`, namespaced) against `budget` with a streaming
    parser that builds no tree, so a part whose text is over the limit is refused before a parser loads it."""
    from xml.etree.ElementTree import XMLParser

    if part not in package.namelist():
        return
    parser = XMLParser(target=_TextCounter(budget, tags))
    with package.open(part) as body:
        while chunk := body.read(1 << 16):
            parser.feed(chunk)
    parser.close()


class _TextCounter:
    """An XMLParser target that only counts the characters inside `tags` (memory stays flat)."""

    def __init__(self, budget: TextBudget, tags: frozenset[str]) -> None:
        self.budget = budget
        self.tags = tags
        self.depth = 0

    def start(self, tag: str, _attrib: dict[str, str]) -> None:
        if tag in self.tags:
            self.depth += 1

    def end(self, tag: str) -> None:
        if tag in self.tags:
            self.depth -= 1

    def data(self, text: str) -> None:
        if self.depth:
            self.budget.add(len(text))

    def close(self) -> None:
        return None
