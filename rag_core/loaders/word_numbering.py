"""Word's list numbers, which are not in a .docx's text: a numbered paragraph holds only `numPr` (a list, `numId`,
and a level, `ilvl`), and Word computes "1.", "2.", "1.1", "a.", "第一章" when it lays the page out. Without
reading `word/numbering.xml` every item of every list came out "1." (issue 39).

What is read: each list (`w:num`) and its definition (`w:abstractNum`, followed through `w:numStyleLink`), with
per-level start value, number format (`decimal`, `lowerLetter`, `upperRoman`, `chineseCounting`, ...), level
text (`%1.%2`) and `lvlRestart`; a list's `lvlOverride` (`startOverride`, or a whole `lvl`). Counting is Word's:
lists that share a definition continue each other's numbers (Word restarts a list only through an override), a
level's counter restarts when a higher level advances (unless `lvlRestart` says otherwise), and a level not
reached yet shows its start value ("1.1" for a first item at level 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
LEVELS = 9


@dataclass(frozen=True)
class Level:
    """One level of a list definition."""

    start: int = 1
    fmt: str = "decimal"
    text: str = "%1."
    restart: int | None = None  # lvlRestart: restart after this (1-based) level advances; 0: never; None: any higher
    legal: bool = False  # isLgl: every level's number shown as decimal ("1.1.1" under "Chapter One")
    space: bool = True  # the suffix after the number: a tab or space (written as a space), or nothing
    style: str = ""  # the paragraph style this level is linked to (w:pStyle): a style's paragraphs are this level


@dataclass(frozen=True)
class Marker:
    """What goes before a list paragraph's text: its number ("2.", "1.1", "(a)") or a bullet ("-")."""

    text: str
    bullet: bool
    level: int
    space: bool = True
    list_id: str = ""  # the list (numId) it counts in


def val(element: Any, child: str, default: str | None = None) -> str | None:
    """The w:val of `element`'s child `child` (a local name), or `default`."""
    if element is None:
        return default
    found = element.find(W + child)
    if found is None:
        return default
    value = found.get(W + "val")
    return default if value is None else value


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _level(lvl: Any, base: Level | None = None) -> Level:
    base = base or Level()
    restart = val(lvl, "lvlRestart")
    text = val(lvl, "lvlText")
    return Level(
        start=_int(val(lvl, "start"), base.start),
        fmt=val(lvl, "numFmt", base.fmt) or "decimal",
        text=base.text if text is None else text,
        restart=_int(restart, 0) if restart is not None else base.restart,
        legal=lvl.find(W + "isLgl") is not None and val(lvl, "isLgl", "1") not in ("0", "false"),
        space=val(lvl, "suff", "tab") != "nothing",
        style=val(lvl, "pStyle", base.style) or "",
    )


class Numbering:
    """The lists of one document and their running counters: ask `marker(num_id, ilvl)` for each numbered
    paragraph in document order (the counters advance)."""

    def __init__(self, numbering: Any, style_num_ids: dict[str, str]) -> None:
        """`numbering`: the w:numbering element (or None); `style_num_ids`: styleId -> the numId its pPr names
        (a `numStyleLink` points at a style, which points at the list)."""
        self._abstract: dict[str, dict[int, Level]] = {}
        self._links: dict[str, str] = {}  # abstractNumId -> the style it takes its levels from (numStyleLink)
        self._nums: dict[str, tuple[str, dict[int, int], dict[int, Level]]] = {}
        self._style_num_ids = style_num_ids
        self._counters: dict[str, list[int | None]] = {}
        self._last_num: dict[str, str] = {}
        self._starts: dict[str, dict[int, int]] = {}
        if numbering is None:
            return
        for abstract in numbering.iter(W + "abstractNum"):
            key = abstract.get(W + "abstractNumId") or ""
            self._abstract[key] = {_int(lvl.get(W + "ilvl"), 0): _level(lvl) for lvl in abstract.findall(W + "lvl")}
            link = val(abstract, "numStyleLink")
            if link:
                self._links[key] = link
        for num in numbering.iter(W + "num"):
            abstract_id = val(num, "abstractNumId") or ""
            starts: dict[int, int] = {}
            replaced: dict[int, Level] = {}
            for override in num.findall(W + "lvlOverride"):
                ilvl = _int(override.get(W + "ilvl"), 0)
                start = val(override, "startOverride")
                if start is not None:
                    starts[ilvl] = _int(start, 1)
                lvl = override.find(W + "lvl")
                if lvl is not None:
                    replaced[ilvl] = _level(lvl, self._abstract.get(abstract_id, {}).get(ilvl))
            self._nums[num.get(W + "numId") or ""] = (abstract_id, starts, replaced)

    def _definition(self, num_id: str) -> tuple[str, dict[int, Level]] | None:
        """(abstractNumId, its levels) of a list, following numStyleLink -> style -> numId (a few hops at most)."""
        seen = set()
        abstract_id = self._nums[num_id][0] if num_id in self._nums else None
        while abstract_id is not None and abstract_id not in seen:
            seen.add(abstract_id)
            link = self._links.get(abstract_id)
            linked_num = self._style_num_ids.get(link) if link else None
            if linked_num is None or linked_num not in self._nums:
                break
            abstract_id = self._nums[linked_num][0]
        if abstract_id is None or abstract_id not in self._abstract:
            return None
        return abstract_id, self._abstract[abstract_id]

    def style_level(self, num_id: str, style_id: str) -> int | None:
        """The level of a list whose definition links it to `style_id` (how a heading style numbers itself
        when its numPr names no ilvl)."""
        found = self._definition(num_id)
        if found is None:
            return None
        return next((i for i, level in found[1].items() if level.style == style_id), None)

    def marker(self, num_id: str, ilvl: int) -> Marker | None:
        """The next number of list `num_id` at level `ilvl` (0-based), counted; None for an unknown list."""
        found = self._definition(num_id)
        if found is None:
            return None
        abstract_id, base = found
        _, overrides, override_levels = self._nums[num_id]
        levels = {**base, **override_levels}
        ilvl = min(max(ilvl, 0), LEVELS - 1)
        counters = self._counters.setdefault(abstract_id, [None] * LEVELS)
        starts = self._starts.setdefault(abstract_id, {})
        if self._last_num.get(abstract_id) != num_id:  # another list of this definition: its overrides restart it
            self._last_num[abstract_id] = num_id
            for at, start in overrides.items():
                if 0 <= at < LEVELS:
                    counters[at] = None
                    starts[at] = start
        level = levels.get(ilvl, Level())
        current = counters[ilvl]
        counters[ilvl] = current + 1 if current is not None else starts.get(ilvl, level.start)
        for deeper in range(ilvl + 1, LEVELS):
            restart = levels.get(deeper, Level()).restart
            if restart is None or (restart > 0 and ilvl < restart):
                counters[deeper] = None
                starts.pop(deeper, None)
        if level.fmt == "bullet":
            return Marker("-", True, ilvl, True, num_id)
        text = level.text
        for at in range(LEVELS):  # %1 .. %9: the numbers of levels 1 .. 9 as they stand
            token = f"%{at + 1}"
            if token not in text:
                continue
            shown = levels.get(at, Level())
            counted = counters[at]
            number = counted if counted is not None else starts.get(at, shown.start)
            text = text.replace(token, format_number(number, "decimal" if level.legal else shown.fmt))
        return Marker(text.strip(), False, ilvl, level.space, num_id)


_CN_DIGITS = "〇一二三四五六七八九"
_CN_LEGAL = "零壹贰叁肆伍陆柒捌玖"
_CN_UNITS = ("", "十", "百", "千")
_CN_LEGAL_UNITS = ("", "拾", "佰", "仟")
_HEAVENLY = "甲乙丙丁戊己庚辛壬癸"
_EARTHLY = "子丑寅卯辰巳午未申酉戌亥"
_CIRCLED = "①②③④⑤⑥⑦⑧⑨⑩⑪⑫⑬⑭⑮⑯⑰⑱⑲⑳"
_ROMAN = ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"), (40, "xl"),
          (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"))


def format_number(n: int, fmt: str) -> str:
    """`n` written in a Word number format (ST_NumberFormat); a format not known here is written as decimal."""
    if fmt == "none":
        return ""
    if n <= 0:
        return str(n)
    if fmt == "decimalZero":
        return f"{n:02d}"
    if fmt in ("lowerLetter", "upperLetter"):
        letters = chr(ord("a") + (n - 1) % 26) * ((n - 1) // 26 + 1)  # Word: y, z, aa, bb, ...
        return letters.upper() if fmt == "upperLetter" else letters
    if fmt in ("lowerRoman", "upperRoman"):
        roman = _roman(n)
        return roman.upper() if fmt == "upperRoman" else roman
    if fmt in ("chineseCounting", "chineseCountingThousand", "japaneseCounting", "taiwaneseCounting",
               "taiwaneseCountingThousand"):
        return _chinese(n, _CN_DIGITS, _CN_UNITS)
    if fmt in ("chineseLegalSimplified", "ideographLegalTraditional"):
        return _chinese(n, _CN_LEGAL, _CN_LEGAL_UNITS, short_ten=False)
    if fmt == "ideographTraditional":
        return _HEAVENLY[(n - 1) % 10]
    if fmt == "ideographZodiac":
        return _EARTHLY[(n - 1) % 12]
    if fmt == "ideographDigital":
        return "".join(_CN_DIGITS[int(d)] for d in str(n))
    if fmt in ("decimalEnclosedCircle", "decimalEnclosedCircleChinese") and n <= len(_CIRCLED):
        return _CIRCLED[n - 1]
    if fmt in ("decimalFullWidth", "decimalFullWidth2"):
        return "".join(chr(0xFF10 + int(d)) for d in str(n))
    if fmt == "ordinal":
        suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
        return f"{n}{suffix}"
    return str(n)


def _roman(n: int) -> str:
    out = []
    for value, numeral in _ROMAN:
        while n >= value:
            out.append(numeral)
            n -= value
    return "".join(out)


def _chinese(n: int, digits: str, units: tuple[str, ...], *, short_ten: bool = True) -> str:
    """1..9999 in Chinese numerals: 十一, 二十, 一百零一; larger numbers as digits."""
    if n >= 10_000:
        return str(n)
    written = str(n)
    out: list[str] = []
    gap = False
    for i, ch in enumerate(written):
        d = int(ch)
        if d == 0:
            gap = True
            continue
        if gap and out:
            out.append("零")
        gap = False
        out.append(digits[d] + units[len(written) - 1 - i])
    text = "".join(out)
    return text[1:] if short_ten and 10 <= n < 20 else text

