"""How each fate of a hit looks in the app: its words, its colour in charts, the style of its row in tables and the
label of its count in the debugger. One exhaustive `match` over `rag_core.records.Fate` (mypy reports a fate
missing here); the maps the tables, the charts and the debugger use are built from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from rag_core.records import DropKind, Fate

from .i18n import N_, t


@dataclass(frozen=True)
class Look:
    label: str  # a short label (a legend entry, a table cell), a msgid
    colour: str  # its marks in charts
    row: str  # CSS of its row in the raw hits table
    count: str = ""  # the label of its count in the debugger's metrics, a msgid ("": not counted)


def look(fate: Fate) -> Look:
    match fate:
        case Fate.KEPT:
            return Look(N_("kept"), "#2e7d32", "")
        case Fate.DUPLICATE:
            return Look(N_("duplicate"), "#9e9e9e", "color: #8a8a8a", N_("Duplicates"))
        case Fate.DOC_CAP:
            return Look(N_("per-document cap"), "#ef6c00", "background-color: #fff3e0", N_("Per-document cap"))
        case Fate.BEYOND_RETURN_N:
            return Look(N_("beyond return-n"), "#64b5f6", "background-color: #eef5fc", N_("Beyond return-n"))
        case Fate.BELOW_THRESHOLD:
            return Look(N_("below threshold"), "#c62828", "background-color: #fdecea", N_("Below threshold"))
        case Fate.DISABLED:
            return Look(N_("disabled"), "#424242", "color: #8a8a8a; text-decoration: line-through", N_("Disabled"))
        case Fate.MERGED:
            return Look(N_("merged"), "#6a1b9a", "color: #6a1b9a", N_("Merged"))
        case Fate.NO_ACCESS:  # counted only (never a raw hit), shown to an admin of the knowledge base
            return Look(N_("no access"), "#37474f", "color: #8a8a8a", N_("No access"))
        case Fate.BEYOND_RETRIEVE_K:
            return Look(N_("beyond retrieve-k"), "#bdbdbd", "")
        case Fate.NO_CHANNEL:
            return Look(N_("in no channel"), "#e0e0e0", "")
        case _:
            assert_never(fate)


HIT_FATES: tuple[Fate, ...] = (Fate.KEPT, *(Fate(kind) for kind in DropKind))  # what a raw hit can become
COLOURS: dict[str, str] = {fate: look(fate).colour for fate in Fate}
ROW_STYLE: dict[str, str] = {fate: look(fate).row for fate in Fate}
_KNOWN = frozenset(Fate)


def fate_label(fate: str) -> str:
    """A fate (`HitTrace.fate`, `ChunkFate.fate`, a code in JSON) as a short label in the user's language; a code
    this app does not know as itself."""
    return t(look(Fate(fate)).label) if fate in _KNOWN else fate
