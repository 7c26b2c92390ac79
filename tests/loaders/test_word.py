"""Word structure (issue 39): a cover page inside a content control, headings made by an outline level, list
numbers from numbering.xml, and long tables that repeat their header row in every chunk. The documents are made by
tests/loaders/word_docs.py with python-docx plus the raw XML it has no API for."""

from __future__ import annotations

import io

import pytest

from rag_core.loaders import load_bytes
from rag_core.loaders.word_numbering import Numbering, format_number
from tests.loaders.checks import chunks_of
from tests.loaders.word_docs import (
    TABLE_HEADER,
    W,
    add_list,
    control,
    cover_docx,
    lists_docx,
    outline_docx,
    set_list,
    set_outline,
    table_docx,
)


def _save(document: object) -> bytes:
    buf = io.BytesIO()
    document.save(buf)  # type: ignore[attr-defined]
    return buf.getvalue()


def test_cover_page_in_a_content_control_is_read() -> None:
    doc = load_bytes(cover_docx(), "plans/acms.docx")
    assert doc.text.startswith("General Test Plan for ACMS\n\nAirport Collaborative Management System\n\nVersion 2.1")
    assert "# Scope" in doc.text


def test_table_of_contents_and_placeholder_controls_are_left_out() -> None:
    text = load_bytes(cover_docx(), "plans/acms.docx").text
    for gone in ("Contents", "1 Scope", "Click or tap"):
        assert gone not in text, gone


def test_inline_controls_and_tracked_insertions_are_read_deletions_are_not() -> None:
    text = load_bytes(cover_docx(), "plans/acms.docx").text
    assert text.endswith("The plan covers the flight information display and gate allocation.")


def test_outline_level_paragraphs_are_headings_and_every_chunk_has_a_heading_path() -> None:
    data, paths = outline_docx()
    assert len(paths) == 11
    doc = load_bytes(data, "制度/变更管理.docx")
    assert doc.text.startswith("# 第一章 总则\n\n## 1.1 目的\n\n本条规定了目的的要求。")
    chunks = chunks_of(doc)
    assert [c.heading_path for c in chunks] == paths  # 11 sections, 11 chunks, each under its own path
    assert all(c.heading_path for c in chunks)


def test_outline_level_headings_without_numbering() -> None:
    data, paths = outline_docx(numbered=False)
    chunks = chunks_of(load_bytes(data, "x.docx"))
    assert [c.heading_path for c in chunks] == paths
    assert paths[0] == ("总则", "目的")


def test_outline_level_nine_is_body_text_and_overrides_a_heading_style() -> None:
    import docx

    document = docx.Document()
    heading = document.add_paragraph("Looks like a heading", style="Heading 2")
    set_outline(heading, 9)  # "Body Text" in Word's outline level box
    document.add_paragraph("Deep", style="Normal")
    set_outline(document.paragraphs[-1], 7)  # levels deeper than Markdown's six stop at ######
    assert load_bytes(_save(document), "x.docx").text == "Looks like a heading\n\n###### Deep"


def test_a_long_paragraph_with_an_outline_level_stays_body_text() -> None:
    import docx

    document = docx.Document()
    long = "这一段正文被误设了大纲级别。" * 20  # 280 characters: not a heading, whatever its outline level
    set_outline(document.add_paragraph(long), 0)
    set_outline(document.add_paragraph("真正的标题"), 0)
    assert load_bytes(_save(document), "x.docx").text == long + "\n\n# 真正的标题"


def test_numbered_lists_count_nest_and_restart() -> None:
    doc = load_bytes(lists_docx(), "steps.docx")
    assert doc.text == (
        "Steps:\n\n"
        "1. Stop the service\n2. Back up the data\n   a. the database\n   b. the uploads\n3. Upgrade\n"
        "      3.1 Check the version\n      3.2 Check the logs\n4. Start the service\n   a. Notify the team\n\n"
        "1. Second procedure\n2. Its next step\n\n"  # another list of the same definition, restarted by an override
        "一、 准备工作\n二、 实施步骤"
    )


def test_list_style_paragraphs_take_their_numbers_from_the_style() -> None:
    import docx

    document = docx.Document()
    for text in ("first", "second", "third"):
        document.add_paragraph(text, style="List Number")
    document.add_paragraph("a point", style="List Bullet")
    assert load_bytes(_save(document), "x.docx").text == "1. first\n2. second\n3. third\n\n- a point"


def test_a_numbered_heading_style_linked_to_its_level_and_num_id_zero() -> None:
    import docx

    document = docx.Document()
    add_list(document, [("decimal", "%1", 1), ("decimal", "%1.%2", 1)], num_id=80, abstract_id=80,
             styles={0: "Heading1", 1: "Heading2"})
    for style_id in ("Heading1", "Heading2"):  # the style names the list, the list's level names the style
        style = document.styles.get_by_id(style_id, 1)
        style.element.get_or_add_pPr().insert(0, _num_pr(80))
    document.add_heading("Scope", 1)
    document.add_heading("Purpose", 2)
    document.add_heading("Terms", 2)
    document.add_heading("Duties", 1)
    document.add_heading("Operations", 2)
    unnumbered = document.add_heading("Appendix", 1)
    set_list(unnumbered, 0)  # numId 0: not numbered, though its style is
    assert load_bytes(_save(document), "x.docx").text.split("\n\n") == [
        "# 1 Scope", "## 1.1 Purpose", "## 1.2 Terms", "# 2 Duties", "## 2.1 Operations", "# Appendix"]


def _num_pr(num_id: int) -> object:
    from docx.oxml import parse_xml

    return parse_xml(f'<w:numPr {W}><w:numId w:val="{num_id}"/></w:numPr>')


def test_numbering_follows_style_links_and_lvl_restart() -> None:
    from docx.oxml import parse_xml

    numbering = parse_xml(
        f'<w:numbering {W}>'
        '<w:abstractNum w:abstractNumId="1"><w:styleLink w:val="Outline"/>'
        '<w:lvl w:ilvl="0"><w:start w:val="5"/><w:numFmt w:val="upperRoman"/><w:lvlText w:val="%1)"/></w:lvl>'
        '<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlRestart w:val="0"/>'
        '<w:lvlText w:val="%1-%2"/><w:suff w:val="nothing"/></w:lvl></w:abstractNum>'
        '<w:abstractNum w:abstractNumId="2"><w:numStyleLink w:val="Outline"/></w:abstractNum>'
        '<w:num w:numId="1"><w:abstractNumId w:val="1"/></w:num>'
        '<w:num w:numId="2"><w:abstractNumId w:val="2"/></w:num>'
        '</w:numbering>')
    lists = Numbering(numbering, {"Outline": "1"})
    shown = [(m.text, m.space) for m in (lists.marker(n, i) for n, i in [("2", 0), ("2", 1), ("2", 0), ("2", 1)])
             if m is not None]
    assert shown == [("V)", True), ("V-1", False), ("VI)", True), ("VI-2", False)]  # lvlRestart 0: never restarts
    assert lists.marker("9", 0) is None


@pytest.mark.parametrize(("n", "fmt", "expected"), [
    (3, "decimal", "3"), (3, "decimalZero", "03"), (28, "lowerLetter", "bb"), (2, "upperLetter", "B"),
    (14, "lowerRoman", "xiv"), (9, "upperRoman", "IX"), (1, "chineseCounting", "一"), (10, "chineseCounting", "十"),
    (15, "chineseCounting", "十五"), (20, "chineseCounting", "二十"), (101, "chineseCountingThousand", "一百零一"),
    (12, "chineseLegalSimplified", "壹拾贰"), (3, "ideographTraditional", "丙"), (2, "ideographZodiac", "丑"),
    (3, "decimalEnclosedCircle", "③"), (12, "decimalFullWidth", "１２"), (2, "ordinal", "2nd"),
    (7, "someFutureFormat", "7"), (4, "none", ""),
])
def test_number_formats(n: int, fmt: str, expected: str) -> None:
    assert format_number(n, fmt) == expected


def test_a_long_table_repeats_its_header_row_in_every_chunk() -> None:
    doc = load_bytes(table_docx(60), "alerts.docx")
    header = "| " + " | ".join(TABLE_HEADER) + " |"
    chunks = chunks_of(doc, 800, 100)
    with_rows = [c for c in chunks if "HighLatency" in c.text]
    assert len(with_rows) >= 4
    for chunk in with_rows:
        assert header in chunk.text, chunk.text[:120]
        first_new_row = chunk.text.index("HighLatency", chunk.overlap_chars)  # a row repeated as overlap may lead
        assert chunk.text.index(header) < first_new_row  # the header comes before the rows it names
    for r in range(1, 61):
        assert f"| Alert{r:03d}HighLatency | {100 + r} ms for 5 minutes |" in doc.text


def test_merged_cells_keep_their_columns_and_vertical_merges_repeat() -> None:
    import docx

    document = docx.Document()
    table = document.add_table(rows=3, cols=3)
    for c, name in enumerate(("Service", "Check", "Owner")):
        table.cell(0, c).text = name
    table.cell(1, 0).merge(table.cell(2, 0)).text = "gateway"
    table.cell(1, 1).text = "5xx | ratio"
    table.cell(2, 1).text = "latency"
    table.cell(1, 2).text = "ops"
    table.cell(2, 2).text = "ops"
    assert load_bytes(_save(document), "x.docx").text == (
        "| Service | Check | Owner |\n|---|---|---|\n| gateway | 5xx \\| ratio | ops |\n| gateway | latency | ops |")


def test_layout_tables_are_paragraphs() -> None:
    import docx

    document = docx.Document()
    cover = document.add_table(rows=1, cols=2)
    cover.cell(0, 0).text = "Prepared by QA"
    cover.cell(0, 1).text = "2024-05-01"
    column = document.add_table(rows=2, cols=1)
    column.cell(0, 0).text = "Note one"
    column.cell(1, 0).text = "Note two"
    assert load_bytes(_save(document), "x.docx").text == "Prepared by QA · 2024-05-01\n\nNote one\n\nNote two"


def test_a_content_control_around_a_table_and_inside_a_cell() -> None:
    import docx
    from docx.oxml import parse_xml

    document = docx.Document()
    table = document.add_table(rows=2, cols=2)
    for c, name in enumerate(("Field", "Value")):
        table.cell(0, c).text = name
    table.cell(1, 0).text = "Owner"
    cell = table.cell(1, 1)._tc
    cell.remove(cell.find("{http://schemas.openxmlformats.org/wordprocessingml/2006/main}p"))
    cell.append(parse_xml(f"<w:sdt {W}><w:sdtPr/><w:sdtContent><w:p><w:r><w:t>Payments team</w:t></w:r></w:p>"
                          "</w:sdtContent></w:sdt>"))
    sdt = parse_xml(f"<w:sdt {W}><w:sdtPr/><w:sdtContent/></w:sdt>")
    table._tbl.addprevious(sdt)
    sdt[1].append(table._tbl)
    control(document, ["After the table."])
    assert load_bytes(_save(document), "x.docx").text == (
        "| Field | Value |\n|---|---|\n| Owner | Payments team |\n\nAfter the table.")
