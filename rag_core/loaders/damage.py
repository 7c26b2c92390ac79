"""Text that came out damaged: characters a reader could not map to letters, counted per page, said in a note, and
the worst pages of a PDF read again by OCR.

A PDF's fonts say which character each glyph is (their ToUnicode maps); a font that does not, or maps its glyphs to
private-use code points, gives text that looks whole and is not: "10–30%" read as "10\\ue00330%", words with holes
(issue 39: one PDF had 159 such characters and was indexed without a word). Such text is found by what it holds:

- unmapped: U+FFFD (the replacement character) and control characters (`clean_extracted` removes most control
  characters before this sees them; the replacement character stays);
- private-use: U+E000-U+F8FF and the private-use planes 15 and 16. An icon font's bullet (U+F0B7 from Symbol) is one
  too: a page is named only when at least `NOTE_SHARE` of its characters are damaged, so a page of bullets is not.

Chinese, Japanese, Korean, emoji and accented letters are not damage (they are assigned code points).

A page with more than `OCR_SHARE` of its characters damaged is read by OCR instead when the `ocr` extra is installed
(the page is rendered from its glyphs, which are whole); without the extra the note says to install it and ingest the
file again. The check runs on every document `load_bytes` makes (`checked`): per page for a PDF, on the whole text for
the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..errors import LoaderError
from ..phrases import Phrase
from ..records import PAGE, Place
from .extracted import Extracted
from .limits import TextBudget
from .ocr import ocr_available
from .options import LoadOptions

NOTE_SHARE = 0.01  # of a page's characters (not counting whitespace) damaged: the page is named in a note
NOTE_MIN = 3  # characters: fewer damaged characters on a page are not worth a note (a stray symbol)
OCR_SHARE = 0.05  # of a page's characters damaged: the page is read by OCR instead (or the note offers it)


_DAMAGED = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffd\ue000-\uf8ff\U000f0000-\U0010ffff]")
_SPACE = re.compile(r"\s")


def is_damaged(char: str) -> bool:
    """A character a reader could not map to a letter: unmapped (U+FFFD, a control character) or private-use."""
    return _DAMAGED.match(char) is not None


@dataclass(frozen=True)
class Damage:
    """What one page (or a document without pages) holds: damaged characters and characters (whitespace not
    counted)."""

    damaged: int
    chars: int

    @property
    def share(self) -> float:
        return self.damaged / self.chars if self.chars else 0.0

    @property
    def noted(self) -> bool:
        return self.damaged >= NOTE_MIN and self.share >= NOTE_SHARE

    @property
    def needs_ocr(self) -> bool:
        return self.noted and self.share > OCR_SHARE


def count_damage(text: str) -> Damage:
    """The damaged characters of `text` and its characters, whitespace not counted (regular expressions: a
    document of millions of characters is counted in milliseconds)."""
    return Damage(len(_DAMAGED.findall(text)), len(text) - len(_SPACE.findall(text)))


def pages_of(extracted: Extracted) -> list[tuple[Place, str]]:
    """A paged document's pages as (place, text), in order; [] when it has no pages (its places are slides, rows, an
    image or none)."""
    places = extracted.places
    if not places or any(p.unit != PAGE for p in places):
        return []
    ends = [p.offset for p in places[1:]] + [len(extracted.text)]
    return [(p, extracted.text[p.offset:end].rstrip("\n")) for p, end in zip(places, ends)]


def checked(extracted: Extracted, data: bytes, name: str, ext: str, budget: TextBudget,
            options: LoadOptions) -> Extracted:
    """`extracted` with notes on its damaged text and, for a PDF with pages over `OCR_SHARE` when OCR is installed,
    those pages read by OCR instead (the module's rule). Unchanged when nothing is damaged."""
    pages = pages_of(extracted)
    if not pages:
        found = count_damage(extracted.text)
        if not found.noted:
            return extracted
        note = Phrase("load.damaged_text", {"count": found.damaged, "share": _percent(found.share)})
        return replace(extracted, notes=(*extracted.notes, note))
    found_by_page = {place.number: count_damage(text) for place, text in pages}
    worst = [number for number, d in found_by_page.items() if d.needs_ocr and not _ocr_place(pages, number)]
    notes: list[Phrase] = []
    read: list[int] = []
    if worst and ext == "pdf" and ocr_available():
        if len(worst) > options.ocr_max_pages:
            notes.append(_listed("load.damaged_ocr_limit", worst, limit=options.ocr_max_pages))
        else:
            extracted, read = _ocr_again(extracted, pages, worst, data, name, budget, options)
            if read:
                notes.append(_plural("load.damaged_ocr_page", read))
    elif worst:
        notes.append(_plural("load.damaged_offer_page", worst))
    left = [n for n, d in found_by_page.items() if d.noted and n not in read]
    if left:
        count = sum(found_by_page[n].damaged for n in left)
        notes.insert(0, _plural("load.damaged_page", left, count=count))
    if not notes:
        return extracted
    return replace(extracted, notes=(*extracted.notes, *notes))


def _ocr_again(extracted: Extracted, pages: list[tuple[Place, str]], numbers: list[int], data: bytes, name: str,
               budget: TextBudget, options: LoadOptions) -> tuple[Extracted, list[int]]:
    """The PDF with the pages `numbers` read by OCR (pdf's OCR of pages without text, run on these): a page whose OCR
    is empty or no less damaged keeps its text, and so do all when OCR fails (the text as read was good enough to
    index). Also the numbers of the pages replaced."""
    from .pdf import _ocr_pages

    texts = [""] * max(p.number for p, _ in pages)
    for place, text in pages:
        texts[place.number - 1] = text
    before = {n: texts[n - 1] for n in numbers}
    used = budget.used
    budget.used -= sum(len(text) + 2 for text in before.values())  # OCR counts the pages it reads again
    try:
        _ocr_pages(data, name, [n - 1 for n in numbers], texts, budget, options)
    except LoaderError:  # OCR was extra: when it fails, runs out of time or passes the text limit, the text stays
        read = []
    else:
        read = [n for n in numbers if texts[n - 1] and count_damage(texts[n - 1]).share < count_damage(before[n]).share]
    for n in numbers:
        if n not in read:
            texts[n - 1] = before[n]
    budget.used = used + sum(len(texts[n - 1]) - len(before[n]) for n in read)
    if not read:
        return extracted, []
    parts: list[str] = []
    places: list[Place] = []
    size = 0
    for place, _ in pages:
        text = texts[place.number - 1]
        offset = size + (2 if parts else 0)
        places.append(replace(place, offset=offset, ocr=place.ocr or place.number in read))
        parts.append(text)
        size = offset + len(text)
    return replace(extracted, text="\n\n".join(parts), encoding="pdf+ocr", places=tuple(places)), read


def _ocr_place(pages: list[tuple[Place, str]], number: int) -> bool:
    """The page was read by OCR already (OCR's own output is not re-read)."""
    return any(place.ocr for place, _ in pages if place.number == number)


def _plural(code: str, numbers: list[int], **params: object) -> Phrase:
    """The phrase `code` ("..._page") for one page, its plural ("..._pages") for more."""
    return _listed(code + ("s" if len(numbers) > 1 else ""), numbers, **params)


def _listed(code: str, numbers: list[int], **params: object) -> Phrase:
    shown = ", ".join(str(n) for n in numbers[:20]) + (f" and {len(numbers) - 20} more" if len(numbers) > 20 else "")
    return Phrase(code, {"pages": shown, **params})


def _percent(share: float) -> str:
    return f"{share:.0%}" if share >= 0.01 else f"{share:.1%}"
