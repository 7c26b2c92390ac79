"""Word documents made here with python-docx, with the raw XML it has no API for (block content controls, outline
levels, numbering.xml lists): the structures issue 39 found lost (tests/loaders/test_word.py, bench/docs_word.py)."""

from __future__ import annotations

import io
from typing import Any

from docx.oxml import parse_xml
from docx.oxml.ns import nsdecls, qn

W = nsdecls("w")

# Chapters and sections of a Chinese corporate standard; each section's body is long enough to be a chunk or two.
OUTLINE_SECTIONS = [
    ("总则", ["目的", "适用范围", "术语"]),
    ("职责", ["运维部", "开发部"]),
    ("变更流程", ["申请", "审批", "实施"]),
    ("附则", ["解释权", "生效日期", "附录"]),
]
OUTLINE_BODY = ("本条规定了{0}的要求。所有变更须在变更窗口内实施，实施前应完成评审并通知相关方；"
                "实施后应在工单中记录结果，并由值班经理确认。Changes to {0} are reviewed before the window opens.")


def _save(document: Any) -> bytes:
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def _p_pr(paragraph: Any) -> Any:
    return paragraph._p.get_or_add_pPr()


def set_outline(paragraph: Any, level: int) -> None:
    """Give a paragraph its own outline level (0 = level 1), as Word's Paragraph > Outline level does."""
    _p_pr(paragraph).append(parse_xml(f'<w:outlineLvl {W} w:val="{level}"/>'))


def set_list(paragraph: Any, num_id: int, ilvl: int = 0) -> None:
    """Put a paragraph in list `num_id` at level `ilvl` (its numPr, as Word writes it)."""
    p_pr = _p_pr(paragraph)
    num_pr = parse_xml(f'<w:numPr {W}><w:ilvl w:val="{ilvl}"/><w:numId w:val="{num_id}"/></w:numPr>')
    p_pr.insert(1 if p_pr.find(qn("w:pStyle")) is not None else 0, num_pr)


def add_list(document: Any, levels: list[tuple[str, str, int]], *, num_id: int, abstract_id: int,
             start_overrides: dict[int, int] | None = None, styles: dict[int, str] | None = None,
             legal: frozenset[int] = frozenset()) -> None:
    """Add a list definition to numbering.xml: `levels` are (numFmt, lvlText, start) for ilvl 0, 1, ...;
    `styles` links a level to a paragraph style id (w:pStyle); `legal` levels show every number as decimal
    (w:isLgl: "1.1" under "第一章"); the list `num_id` uses it."""
    lvls = "".join(
        f'<w:lvl w:ilvl="{i}"><w:start w:val="{start}"/><w:numFmt w:val="{fmt}"/>'
        + (f'<w:pStyle w:val="{(styles or {})[i]}"/>' if i in (styles or {}) else "")
        + ("<w:isLgl/>" if i in legal else "")
        + f'<w:lvlText w:val="{text}"/></w:lvl>'
        for i, (fmt, text, start) in enumerate(levels))
    add_abstract(document, abstract_id, lvls)
    add_num(document, num_id, abstract_id, start_overrides)


def add_abstract(document: Any, abstract_id: int, lvls: str) -> None:
    numbering = document.part.numbering_part.element
    abstract = parse_xml(f'<w:abstractNum {W} w:abstractNumId="{abstract_id}">{lvls}</w:abstractNum>')
    first_num = numbering.find(qn("w:num"))
    if first_num is None:
        numbering.append(abstract)
    else:
        first_num.addprevious(abstract)  # the schema puts every abstractNum before the nums


def add_num(document: Any, num_id: int, abstract_id: int, start_overrides: dict[int, int] | None = None) -> None:
    overrides = "".join(f'<w:lvlOverride w:ilvl="{i}"><w:startOverride w:val="{v}"/></w:lvlOverride>'
                        for i, v in (start_overrides or {}).items())
    document.part.numbering_part.element.append(parse_xml(
        f'<w:num {W} w:numId="{num_id}"><w:abstractNumId w:val="{abstract_id}"/>{overrides}</w:num>'))


def control(document: Any, texts: list[str], *, gallery: str | None = None, placeholder: bool = False,
            style: str | None = None) -> None:
    """Append a block content control (w:sdt) holding one paragraph per text, as Word's cover pages, tables of
    contents and form fields are stored."""
    props = ""
    if placeholder:
        props += "<w:showingPlcHdr/>"
    if gallery:
        props += f'<w:docPartObj><w:docPartGallery w:val="{gallery}"/><w:docPartUnique/></w:docPartObj>'
    p_style = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
    paragraphs = "".join(f"<w:p>{p_style}<w:r><w:t xml:space=\"preserve\">{t}</w:t></w:r></w:p>" for t in texts)
    sdt = parse_xml(f"<w:sdt {W}><w:sdtPr>{props}</w:sdtPr><w:sdtContent>{paragraphs}</w:sdtContent></w:sdt>")
    body = document.element.body
    body.insert(len(body) - 1, sdt)  # before the body's closing sectPr


def cover_docx() -> bytes:
    """A test plan whose cover page is a content control (as Word's Insert > Cover Page makes it), followed by a
    table of contents control, an unfilled date field and the body; one paragraph has an inline content control
    and a tracked insertion (python-docx's Paragraph.text reads neither)."""
    import docx
    from docx.enum.style import WD_STYLE_TYPE

    document = docx.Document()
    control(document, ["General Test Plan for ACMS", "Airport Collaborative Management System", "Version 2.1"],
            gallery="Cover Pages")
    toc = document.styles.add_style("toc 1", WD_STYLE_TYPE.PARAGRAPH)
    control(document, ["Contents", "1 Scope\t3", "2 Test items\t4"], gallery="Table of Contents", style=toc.style_id)
    control(document, ["Click or tap to enter a date."], placeholder=True)
    document.add_heading("Scope", level=1)
    paragraph = document.add_paragraph("The plan covers ")
    paragraph._p.append(parse_xml(
        f'<w:sdt {W}><w:sdtPr/><w:sdtContent><w:r><w:t>the flight information display</w:t></w:r></w:sdtContent>'
        "</w:sdt>"))
    paragraph._p.append(parse_xml(f'<w:ins {W} w:id="1" w:author="QA"><w:r><w:t> and gate allocation</w:t></w:r>'
                                  "</w:ins>"))
    paragraph._p.append(parse_xml(f'<w:del {W} w:id="2" w:author="QA"><w:r><w:delText> and billing</w:delText>'
                                  "</w:r></w:del>"))
    paragraph.add_run(".")
    return _save(document)


def outline_docx(numbered: bool = True) -> tuple[bytes, list[tuple[str, ...]]]:
    """A Chinese corporate standard whose headings are Normal paragraphs made headings by an outline level: the
    chapters by the paragraph's own w:outlineLvl, the sections by a custom style ("条款") that carries one,
    numbered "第一章" / "1.1" by a multilevel list. Returns the document and its sections' heading paths."""
    import docx
    from docx.enum.style import WD_STYLE_TYPE

    document = docx.Document()
    clause = document.styles.add_style("条款", WD_STYLE_TYPE.PARAGRAPH)
    clause.base_style = document.styles["Normal"]
    clause.element.get_or_add_pPr().append(parse_xml(f'<w:outlineLvl {W} w:val="1"/>'))
    if numbered:
        add_list(document, [("chineseCounting", "第%1章", 1), ("decimal", "%1.%2", 1)], num_id=90, abstract_id=90,
                 legal=frozenset({1}))
    paths: list[tuple[str, ...]] = []
    for c, (chapter, sections) in enumerate(OUTLINE_SECTIONS, 1):
        head = document.add_paragraph(chapter)
        set_outline(head, 0)
        if numbered:
            set_list(head, 90, 0)
        chapter_title = f"第{'一二三四五六七八九'[c - 1]}章 {chapter}" if numbered else chapter
        for s, section in enumerate(sections, 1):
            sub = document.add_paragraph(section, style=clause)
            if numbered:
                set_list(sub, 90, 1)
            paths.append((chapter_title, f"{c}.{s} {section}" if numbered else section))
            for _ in range(3):
                document.add_paragraph(OUTLINE_BODY.format(section))
    return _save(document), paths


def lists_docx() -> bytes:
    """Numbered lists from numbering.xml: a decimal list with a lowerLetter level under it, a "1.1" level, a second
    list of the same definition that restarts at 1 (startOverride), and a Chinese "一、" list."""
    import docx

    document = docx.Document()
    add_list(document, [("decimal", "%1.", 1), ("lowerLetter", "%2.", 1), ("decimal", "%1.%3", 1)],
             num_id=70, abstract_id=70)
    add_num(document, 71, 70, {0: 1})
    add_list(document, [("chineseCounting", "%1、", 1)], num_id=72, abstract_id=72)
    document.add_paragraph("Steps:")
    for text, num, ilvl in [("Stop the service", 70, 0), ("Back up the data", 70, 0), ("the database", 70, 1),
                            ("the uploads", 70, 1), ("Upgrade", 70, 0), ("Check the version", 70, 2),
                            ("Check the logs", 70, 2), ("Start the service", 70, 0), ("Notify the team", 70, 1),
                            ("Second procedure", 71, 0), ("Its next step", 71, 0),
                            ("准备工作", 72, 0), ("实施步骤", 72, 0)]:
        set_list(document.add_paragraph(text), num, ilvl)
    return _save(document)


TABLE_HEADER = ("Alert", "Threshold", "Runbook")


def table_docx(rows: int = 60) -> bytes:
    """A long table (a header row and `rows` rows) between two paragraphs, longer than several chunks."""
    import docx

    document = docx.Document()
    document.add_heading("Alert thresholds", level=1)
    document.add_paragraph("Each alert, the value that fires it and the runbook to follow.")
    table = document.add_table(rows=rows + 1, cols=3)
    for c, name in enumerate(TABLE_HEADER):
        table.cell(0, c).text = name
    for r in range(1, rows + 1):
        for c, value in enumerate((f"Alert{r:03d}HighLatency", f"{100 + r} ms for 5 minutes",
                                   f"runbooks/latency-{r}.md")):
            table.cell(r, c).text = value
    document.add_paragraph("Thresholds are reviewed every quarter.")
    return _save(document)
