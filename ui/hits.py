"""The retrieval debugger's hit list: one readable row per raw hit, where a person looks first. Each row has its
rank, its fate (the colour of ui/fates.py), its full evidence key, where it is in its document, its score and its
rank and score in each channel, the reason it was dropped, the query's BM25 terms its chunk contains with their shares
of its BM25 score (rag_core.retrieval.keywords), and a snippet of its text with those terms marked. Pure functions
over `LookupResult.to_dict()`: the same data as the grid one tab away."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rag_core.retrieval.keywords import term_spans

from .fates import COLOURS, fate_label
from .html import esc, source_link_html
from .i18n import t
from .reasons import describe_drop, location_text

SNIPPET_CHARS = 320


def snippet_html(text: str, words: Sequence[str], chars: int = SNIPPET_CHARS) -> str:
    """`text` cut to about `chars` characters around the first of `words` it holds (its start when none), escaped,
    with every occurrence of `words` marked as BM25 matched them (keywords.term_spans: a Traditional character marks
    its Simplified term, an English word its other endings)."""
    flat = " ".join(text.split())
    first = term_spans(flat, words)
    start = max(0, first[0][0] - chars // 5) if first else 0
    if start:  # from a word's start
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < start + 30 else start
    shown = flat[start:start + chars]
    out, at = [], 0
    for begin, end in term_spans(shown, words):
        out += [esc(shown[at:begin]), f"<mark>{esc(shown[begin:end])}</mark>"]
        at = end
    out.append(esc(shown[at:]))
    return ("… " if start else "") + "".join(out) + (" …" if start + chars < len(flat) else "")


def terms_html(hit: Mapping[str, Any]) -> str:
    """The query's BM25 terms the hit's chunk contains, each with its share of the chunk's BM25 score when Milvus
    scored them ("" when it contains none)."""
    matched = [str(w) for w in hit.get("matched_terms") or ()]
    if not matched:
        return ""
    shares = hit.get("term_shares") or {}
    parts = [f"<b>{esc(w)}</b> {shares[w]:.0%}" if isinstance(shares.get(w), float) else f"<b>{esc(w)}</b>"
             for w in sorted(matched, key=lambda w: -float(shares.get(w) or 0.0))]
    tip = t("The query's BM25 terms this chunk contains, with each one's share of its BM25 score")
    label = t("terms")
    return f'<span class="hit-terms" title="{esc(tip)}">{esc(label)}: {" · ".join(parts)}</span>'


def _channels(hit: Mapping[str, Any]) -> str:
    parts = []
    for name, found in (hit.get("channels") or {}).items():
        score = found.get("score")
        parts.append(f"{esc(name)} #{found.get('rank')}" + (f" {score:.3f}" if isinstance(score, float) else ""))
    if hit.get("rerank_score") is not None:
        parts.append(t("rerank {score:.3f} (was #{fused})", score=hit["rerank_score"], fused=hit.get("fused_rank")))
    return " · ".join(parts)


def hit_row_html(hit: Mapping[str, Any], words: Sequence[str] | None = None) -> str:
    """One hit's row; its snippet marks `words` (default: the BM25 terms its chunk contains, `matched_terms`)."""
    words = list(hit.get("matched_terms") or ()) if words is None else words
    fate = str(hit.get("fate", "kept"))
    colour = COLOURS.get(fate, "#9e9e9e")
    kept = fate == "kept"
    where = location_text(hit.get("location", ""))
    head = hit.get("heading_path") or hit.get("title") or ""
    heading = f'<div style="font-size:0.78rem;color:#777">{esc(head)}</div>' if head else ""
    place = f"<span>{esc(where)}</span>" if where else ""
    score = t("score {score:.4f}", score=hit.get("score", 0.0))
    why = re.sub(r"`([^`]*)`", r"<code>\1</code>", esc(describe_drop(hit.get("drop"))))  # its keys as code
    reason = "" if kept else f'<div style="font-size:0.8rem;color:{colour}">{why}</div>'

    marks = "".join(f' <span class="hit-mark">{esc(m)}</span>' for m, on in (
        (t("edited"), hit.get("edited")), (t("added"), hit.get("added")),
        (t("cross-language"), hit.get("cross_language"))) if on)
    return (
        f'<div class="hit-row" data-fate="{esc(fate)}" style="border-left:4px solid {colour};padding:4px 10px;'
        f'margin:0 0 6px 0;background:{"#fafafa" if kept else "#fff"};opacity:{1 if kept else 0.8}">'
        f'<div style="display:flex;flex-wrap:wrap;gap:4px 12px;align-items:baseline;font-size:0.88rem">'
        f'<b>#{hit.get("rank")}</b>'
        f'<span style="background:{colour};color:white;border-radius:0.6rem;padding:0 7px;font-size:0.78rem">'
        f'{esc(fate_label(fate))}</span>'
        f'<code style="word-break:break-all">{esc(hit.get("evidence_key", ""))}</code>'
        f'{place}'
        f'<span>{esc(score)}</span>'
        f'<span style="color:#555">{_channels(hit)}</span>{terms_html(hit)}{marks}'
        f'{source_link_html(str(hit.get("source_url") or ""))}</div>'
        f'{heading}'
        f'<div style="font-size:0.86rem;line-height:1.5;word-break:break-word">'
        f'{snippet_html(str(hit.get("content", "")), words)}</div>{reason}</div>')


def hit_list_html(hits: Iterable[Mapping[str, Any]]) -> str:
    """Every raw hit (`LookupResult.to_dict()["raw_hits"]`) as a row, in rank order, each marking the BM25 terms its
    chunk contains."""
    rows = "".join(hit_row_html(h) for h in hits)
    return (f'<div class="hit-list"><style>.hit-list mark{{background:#ffe58f;padding:0 1px}}'
            f'.hit-list .hit-mark{{font-size:0.75rem;color:#555;border:1px solid #ccc;border-radius:0.5rem;'
            f'padding:0 5px}}.hit-list .hit-terms{{font-size:0.8rem;color:#555}}</style>{rows}</div>')
