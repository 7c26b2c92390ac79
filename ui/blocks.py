"""The retrieval debugger's Context view: the evidence blocks the agent is given, after the expansion and merge stages
(rag_core/retrieval/expand.py, merge.py). For each block its key and the hits it holds, its chunks before and after
it grew ("chunk 4 → chunks 3–6, parent section 'Runbook > Diagnosis'"), what stopped the growth, its tokens and
what the projection gave of it; its text with each matched chunk marked. Above them the projection's tokens against
`rag.context-tokens`, the tokenizer named, and the blocks a budget left out, with which.

Pure HTML builders over `LookupResult.to_dict()` ("blocks", "context", "projection", "projection_left_out"), shared
with the chat's citations (`cited_block`, `block_html`), and `context_view`, which draws them. Block text is escaped
(ui/html.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import streamlit as st

from rag_core.identity import key_range

from .html import MARKER, esc, marked_html
from .i18n import N_, t, tn
from .reasons import phrase

Block = Mapping[str, Any]  # one of LookupResult.to_dict()["blocks"]

# What stopped a block's growth (`Block.stopped`, a code), in words: "Growth stopped at {what}".
_STOPPED = {
    "block_tokens": N_("the block's token budget ({tokens:,} tokens, `rag.block-tokens`)"),
    "document": N_("the start or end of the document"),
    "disabled": N_("a disabled chunk (it never grows across one)"),
    "added": N_("an added chunk (it has no place in the document's text)"),
}
# A block that did not grow at all, and why (its `stopped`).
_CODE = '<code style="font-size:0.78rem">{}</code>'
_NOT_GROWN = {
    "changed": N_("Not expanded: the document changed since the search (re-indexed)."),
    "unavailable": N_("Not expanded: this search cannot read whole documents."),
    "added": N_("Not expanded: an added chunk has no place in the document's text."),
}


def chunks_text(first: int | None, last: int | None) -> str:
    """"chunk 4" or "chunks 3–6"."""
    if first is None or last is None:
        return t("no chunk range")
    return t("chunk {index}", index=first) if first == last else t("chunks {first}–{last}", first=first, last=last)


def matched_text(block: Block) -> str:
    """The chunks the block's hits matched: "chunk 4", "chunks 3–5", or "chunks 0, 2" when they are not in a row."""
    before = block.get("matched_range")
    if not before:
        return chunks_text(None, None)
    indexes = sorted({r[1] for r in map(key_range, block.get("matched") or ()) if r is not None})
    if len(indexes) > 1 and indexes != list(range(indexes[0], indexes[-1] + 1)):
        return t("chunks {indexes}", indexes=", ".join(map(str, indexes)))
    return chunks_text(before[0], before[1])


def _range(block: Block) -> tuple[int | None, int | None]:
    first, last = (list(block.get("range") or ()) + [None, None])[:2]
    return first, last


def growth_text(block: Block, params: Mapping[str, Any] | None = None) -> str:
    """The block's chunks before → after its growth, and what it grew to: "chunk 4 → chunks 3–6, parent section
    'Runbook > Diagnosis'". `params`: the lookup's (`to_dict()["params"]`), for the neighbours' count."""
    before = block.get("matched_range")
    first, last = _range(block)
    if not before:
        return t("not a chunk of a known document: given as found")
    was = matched_text(block)
    now = chunks_text(first, last)
    grew = block.get("grew", "none")
    if grew == "none":
        return t("{chunks} (not expanded)", chunks=was)
    moved = (first, last) != tuple(before)
    head = t("{before} → {after}", before=was, after=now) if moved else was
    if grew == "parent":
        section = block.get("section") or t("(no heading)")
        return t("{chunks}, parent section '{section}'", chunks=head, section=section)
    n = int(((params or {}).get("expand") or {}).get("neighbours") or 0)
    return tn("{chunks}, {n} neighbouring chunk on each side", "{chunks}, {n} neighbouring chunks on each side", n,
              chunks=head)


def stopped_text(block: Block, block_budget: int | None = None) -> str:
    """What stopped the block's growth, in words ("" when it reached what it grows to, or never grows)."""
    stopped = str(block.get("stopped") or "")
    if not stopped:
        return ""
    if stopped in _NOT_GROWN and not _grown(block):
        return t(_NOT_GROWN[stopped])
    if stopped in _STOPPED:
        return t("Growth stopped at {what}.", what=t(_STOPPED[stopped], tokens=block_budget or 0))
    return t("Growth stopped: {code}", code=stopped)


def _grown(block: Block) -> bool:
    before = block.get("matched_range")
    return before is not None and tuple(_range(block)) != tuple(before)


def more_than_a_chunk(block: Block | None) -> bool:
    """The block holds more than one hit's chunk as found: it grew to its section or neighbours, or hits merged."""
    return block is not None and (len(block.get("matched") or ()) > 1 or _grown(block))


def given_text(block: Block, given: Mapping[str, Any] | None, left_out: Mapping[str, Any] | None) -> str:
    """What the projection gave the agent of the block: all of it, cut to N tokens, or nothing (which budget)."""
    if left_out is not None:
        return t("Left out: {reason}", reason=phrase(left_out.get("reason_phrase"), str(left_out.get("reason"))))
    if given is None:
        return ""
    if given.get("truncated"):
        return t("Cut to {tokens:,} tokens for the agent.", tokens=int(given.get("tokens") or 0))
    return t("Given whole to the agent.")


def highlights_for(block: Block, cited: str | None = None) -> list[list[int]]:
    """The [start, end) of the matched chunks in the block's text; of the `cited` member's chunk only when it is one
    of several (marks are in chunk order, the matched keys best first)."""
    marks = [list(h) for h in block.get("highlights") or ()]
    matched = list(block.get("matched") or ())
    if not cited or cited == block.get("key") or cited not in matched:
        return marks
    indexes = sorted({r[1] for r in map(key_range, matched) if r is not None})
    found = key_range(cited)
    if found is None or len(indexes) != len(marks) or found[1] not in indexes:
        return marks
    return [marks[indexes.index(found[1])]]


def block_html(block: Block, *, params: Mapping[str, Any] | None = None, block_budget: int | None = None,
               given: Mapping[str, Any] | None = None, left_out: Mapping[str, Any] | None = None,
               cited: str | None = None, max_height: int = 360) -> str:
    """One evidence block as a card: its key, the hits it holds, its growth, what stopped it, its tokens, what the
    projection gave of it, and its text with the matched chunks marked (`cited`: only that member's chunk)."""
    key = str(block.get("key", ""))
    matched = [str(k) for k in block.get("matched") or ()]
    facts = [growth_text(block, params), tn("{n:,} token", "{n:,} tokens", int(block.get("tokens") or 0))]
    stopped = stopped_text(block, block_budget)
    lines = [esc(" · ".join(facts))]
    if len(matched) > 1:
        lines.append(esc(tn("{n} hit merged into this block:", "{n} hits merged into this block:", len(matched),))
                     + " " + ", ".join(_CODE.format(esc(k)) for k in matched))
    elif matched and matched[0] != key:
        lines.append(esc(t("matched:")) + " " + _CODE.format(esc(matched[0])))
    for extra in (stopped, given_text(block, given, left_out)):
        if extra:
            lines.append(esc(extra).replace("`rag.block-tokens`", _CODE.format("rag.block-tokens")))
    no_heading = '<span style="color:#9ca3af">' + esc(t("(no heading)")) + '</span>'
    section = esc(block.get("section")) if block.get("section") else no_heading
    title = t("matched chunk (found by the search)")
    body = marked_html(str(block.get("content", "")), highlights_for(block, cited), title=title)
    faded = "opacity:0.7;" if left_out is not None else ""
    return (f'<div class="context-block" data-key="{esc(key)}" data-grew="{esc(block.get("grew", ""))}" '
            f'style="border:1px solid #d5dbe3;border-left:4px solid {MARKER};border-radius:0.5rem;'
            f'margin:0 0 0.6rem;background:#fff;{faded}">'
            f'<div style="padding:0.35rem 0.75rem;background:#f3f6fa;border-radius:0.5rem 0.5rem 0 0;'
            f'font-size:0.85rem"><b style="font-family:ui-monospace,monospace;word-break:break-all">{esc(key)}</b>'
            f' · <span class="block-section">{section}</span>'
            + "".join(f'<div style="color:#4b5563;font-size:0.78rem;word-break:break-word">{line}</div>'
                      for line in lines)
            + f'</div><div class="block-text" style="white-space:pre-wrap;word-break:break-word;padding:0.5rem 0.75rem;'
              f'font-size:0.88rem;line-height:1.55;max-height:{max_height}px;overflow-y:auto">{body}</div></div>')


def budget_html(context: Mapping[str, Any]) -> str:
    """The projection's tokens against `rag.context-tokens`, as a bar, the tokenizer named."""
    used, budget = int(context.get("tokens") or 0), int(context.get("budget") or 0)
    share = min(1.0, used / budget) if budget else 0.0
    colour = "#2e7d32" if share < 0.9 else "#ef6c00"
    words = t("{used:,} of {budget:,} tokens (`rag.context-tokens`) given to the agent · counted with {tokenizer}",
              used=used, budget=budget, tokenizer=context.get("tokenizer", ""))
    return (f'<div class="context-budget" data-used="{used}" data-budget="{budget}" style="margin:0 0 0.6rem">'
            f'<div style="height:10px;border-radius:5px;background:#e5e7eb;overflow:hidden">'
            f'<div style="width:{share * 100:.1f}%;height:100%;background:{colour}"></div></div>'
            f'<div style="font-size:0.85rem;color:#374151;margin-top:0.25rem;word-break:break-word">'
            + esc(words).replace("`rag.context-tokens`", _CODE.format("rag.context-tokens")) + '</div></div>')


def _by_key(rows: Iterable[Mapping[str, Any]], field: str) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for row in rows:
        out.setdefault(str(row.get(field)), row)
    return out


def context_html(data: Mapping[str, Any]) -> str:
    """Every block of a lookup (`LookupResult.to_dict()`) as a card, in the order the agent gets them."""
    context = data.get("context") or {}
    given = _by_key(data.get("projection") or (), "document_id")
    left_out = _by_key(data.get("projection_left_out") or (), "evidence_key")
    cards = [block_html(b, params=data.get("params"), block_budget=context.get("block_budget"),
                        given=given.get(str(b.get("key"))), left_out=left_out.get(str(b.get("key"))))
             for b in data.get("blocks") or ()]
    return '<div class="context-blocks">' + "".join(cards) + "</div>"


def left_out_lines(data: Mapping[str, Any]) -> list[str]:
    """The projection's left-out blocks, each with the budget that cut it (markdown)."""
    return [t("`{key}` ({reason})", key=x["evidence_key"], reason=phrase(x.get("reason_phrase"), x["reason"]))
            for x in data.get("projection_left_out") or ()]


def context_view(data: Mapping[str, Any]) -> None:
    """The debugger's Context tab: the token bar, what the budgets left out, then each block."""
    context = data.get("context") or {}
    blocks = data.get("blocks") or ()
    st.html(budget_html(context))
    expand = str(context.get("expand") or "none")
    grown = sum(1 for b in blocks if _grown(b))
    st.caption(t("Expand: {expand} · merge: {merge} · {grown} of {n} blocks grew · at most {block:,} tokens per "
                 "hit in a block (`rag.block-tokens`)", expand=expand,
                 merge=t("on") if context.get("merge") else t("off"), grown=grown, n=len(blocks),
                 block=int(context.get("block_budget") or 0)))
    if lines := left_out_lines(data):
        st.warning(t("Left out by the projection budgets: {items}", items=", ".join(lines)), icon="✂️")
    if not blocks:
        st.caption(t("No evidence blocks."))
        return
    st.html(context_html(data))


def cited_block(lookups: Sequence[Mapping[str, Any]], cited: str) -> tuple[Block, Mapping[str, Any]] | None:
    """The block a citation names in a turn's lookups, and its lookup: the block whose key it is, or one that holds it
    (a hit merged into it, `matched`); the first found."""
    for lookup in lookups:
        for block in lookup.get("blocks") or ():
            if block.get("key") == cited or cited in (block.get("matched") or ()):
                return block, lookup
    return None
