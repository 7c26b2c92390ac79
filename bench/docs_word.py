"""Word structure (issue 39), before and after, in one run: the Word loader of before (python-docx's own walk and
`Paragraph.text`, numbered paragraphs as "- " and list styles as "1. ", tables as `a | b` lines; re-implemented
below, as it was) next to the loader now (`load_bytes`), on documents made here (tests/loaders/word_docs.py):

- heading paths: on a Chinese corporate standard whose 11 section headings are Normal paragraphs with an outline
  level (chunks 800/100): the share of chunks with a heading path, and how many of the 11 sections' paths are found;
- list numbers: on a document with nested, restarted and Chinese ("一、") lists, the share of 13 items written with
  the number Word shows;
- cover page: whether the title inside a cover-page content control is in the text;
- table header: on a 60-row table, the share of the chunks holding its rows that also hold its header row;
- documents per second over the four documents (the fastest of a few runs).

markitdown (mammoth-based) is a baseline only when it is installed; it is not a dependency and is not installed here.
`measure_word(quick)` returns the figures; `render_word(figures)` a Markdown table of them.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from typing import Any

from bench.common import best_of, log, table

CHUNK, OVERLAP = 800, 100
LIST_ITEMS = [
    "1. Stop the service", "2. Back up the data", "a. the database", "b. the uploads", "3. Upgrade",
    "3.1 Check the version", "3.2 Check the logs", "4. Start the service", "a. Notify the team",
    "1. Second procedure", "2. Its next step", "一、 准备工作", "二、 实施步骤",
]
COVER_TITLE = "General Test Plan for ACMS"
_HEADER = re.compile(r"Alert\s*\|\s*Threshold\s*\|\s*Runbook")


# --- before: the Word loader as it was (python-docx's walk) -----------------------------------------------------

_OLD_HEADING = re.compile(r"^(?:heading|标题)\s*([1-9])$", re.IGNORECASE)


def before(data: bytes) -> str:
    """The text the Word loader wrote before issue 39 (its conversion, without the size checks)."""
    import docx
    from docx.table import Table

    document = docx.Document(io.BytesIO(data))
    blocks = []
    for item in document.iter_inner_content():
        block = _old_table(item) if isinstance(item, Table) else _old_paragraph(item)
        if block:
            blocks.append(block)
    return "\n\n".join(blocks)


def _old_paragraph(paragraph: Any) -> str:
    text: str = paragraph.text
    if not text.strip():
        return ""
    style = paragraph.style
    for _ in range(6):
        if style is None:
            break
        name = (style.name or "").strip().lower()
        m = _OLD_HEADING.match(name)
        if m or name in ("title", "标题"):
            return "#" * (min(int(m.group(1)), 6) if m else 1) + " " + " ".join(text.split())
        if name.startswith("list bullet"):
            return "- " + text.strip()
        if name.startswith("list number"):
            return "1. " + text.strip()
        style = style.base_style
    p_pr = paragraph._p.pPr
    if p_pr is not None and p_pr.numPr is not None:
        return "- " + text.strip()
    return text


def _old_table(tbl: Any) -> str:
    rows = []
    for row in tbl.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            if previous is not None and cell._tc is previous:
                continue
            previous = cell._tc
            cells.append(" ".join(cell.text.split()))
        if any(cells):
            rows.append(" | ".join(cells))
    return "\n".join(rows)


# --- after, and the baseline ---------------------------------------------------------------------------------

def after(data: bytes) -> str:
    from rag_core.loaders import load_bytes

    return load_bytes(data, "document.docx").text


def _markitdown() -> Callable[[bytes], str] | None:
    try:
        from markitdown import MarkItDown
    except ImportError:
        return None
    converter = MarkItDown()

    def convert(data: bytes) -> str:
        try:
            from markitdown import StreamInfo  # markitdown 0.1 names the type this way
        except ImportError:  # older releases take the extension
            return str(converter.convert_stream(io.BytesIO(data), file_extension=".docx").text_content)
        return str(converter.convert_stream(io.BytesIO(data), stream_info=StreamInfo(extension=".docx")).markdown)

    return convert


# --- the figures ---------------------------------------------------------------------------------------------------

def score(text_of: Callable[[bytes], str], docs: dict[str, Any]) -> dict[str, Any]:
    from rag_core.chunking import chunk_text

    chunks = chunk_text(text_of(docs["outline"]), CHUNK, OVERLAP)
    expected = docs["outline_paths"]
    found = {c.heading_path for c in chunks}
    list_lines = {line.strip() for line in text_of(docs["lists"]).splitlines()}
    table_chunks = [c for c in chunk_text(text_of(docs["table"]), CHUNK, OVERLAP) if "HighLatency" in c.text]
    return {
        "chunks": len(chunks),
        "heading_path_share": sum(bool(c.heading_path) for c in chunks) / len(chunks) if chunks else 0.0,
        "heading_paths_found": sum(p in found for p in expected),
        "heading_paths_expected": len(expected),
        "list_numbers_right": sum(item in list_lines for item in LIST_ITEMS) / len(LIST_ITEMS),
        "cover_title_kept": COVER_TITLE in text_of(docs["cover"]),
        "table_chunks_with_header": (sum(bool(_HEADER.search(c.text)) for c in table_chunks) / len(table_chunks)
                                     if table_chunks else 0.0),
    }


def measure_word(quick: bool = False) -> dict[str, Any]:
    """The figures of each reader: {"readers": [{"reader": ..., figures..., "docs_s": ...}], "left_out": [...]}."""
    from tests.loaders.word_docs import cover_docx, lists_docx, outline_docx, table_docx

    outline, paths = outline_docx()
    docs: dict[str, Any] = {"outline": outline, "outline_paths": paths, "lists": lists_docx(),
                            "cover": cover_docx(), "table": table_docx(60)}
    files = [docs[k] for k in ("outline", "lists", "cover", "table")]
    readers: dict[str, Callable[[bytes], str]] = {"before (python-docx walk)": before,
                                                  "after (rag_core/loaders/word.py)": after}
    left_out = []
    markitdown = _markitdown()
    if markitdown is None:
        left_out.append("markitdown (not installed)")
    else:
        readers["markitdown"] = markitdown
    rows = []
    for name, text_of in readers.items():
        log(f"docs_word: {name} ...")
        seconds, _ = best_of(lambda: [text_of(f) for f in files], 2 if quick else 5)  # noqa: B023
        rows.append({"reader": name, **score(text_of, docs), "docs_s": len(files) / seconds})
    return {"readers": rows, "left_out": left_out}


def render_word(figures: dict[str, Any]) -> str:
    rows = [[r["reader"], r["heading_path_share"], f"{r['heading_paths_found']}/{r['heading_paths_expected']}",
             r["list_numbers_right"], "yes" if r["cover_title_kept"] else "no", r["table_chunks_with_header"],
             r["docs_s"]] for r in figures["readers"]]
    text = table(["reader", "chunks with a heading path", "section paths found", "list numbers right",
                  "cover title kept", "table chunks with header", "documents/s"], rows, 2)
    if figures["left_out"]:
        text += "\n\nLeft out: " + ", ".join(figures["left_out"]) + "."
    return text


if __name__ == "__main__":
    print(render_word(measure_word()))
