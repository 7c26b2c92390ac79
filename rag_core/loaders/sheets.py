"""Spreadsheets (.xlsx, with openpyxl) and delimited text (.csv, .tsv) -> records, one paragraph per row.

Each row becomes a record that repeats its column headers, `Alert: HighCPUUsage · Threshold: 85% · Runbook: ...`,
so any chunk of a table says what its values are; rows are paragraphs, which the chunker packs whole
(`chunking.chunk_text(records=True)`). Each sheet is a `# Sheet name` section, so the sheet is in the heading
path. The header row is the first row about as wide as the table (rows above it, such as a title, are
paragraphs of their own). Every row is a `Place` (unit "row", its number as the spreadsheet shows it), so a
chunk is cited as `sheet Alerts, rows 2–9`.

Q&A sheets: a sheet whose headers include a question and an answer column (`question`/`answer`, `问题`/`答案`,
`desc`/`reply`, `Q_EN`/`A_EN`, ...: case, spaces and a language suffix ignored; or the two named by the setting
`loader.qa-columns`) gets one section per pair: the question is the heading line (`## Q: ...`), the answer (and the
other columns) its body. A bilingual sheet (`q_en`, `q_zh`, `a_en`, `a_zh`) gives one section per row whose heading
holds both questions (`## Q: How do I ...? / 如何……？`), its body both answers: one chunk per row, so a row is one
evidence key and one citation, and its answer is never two hits taking two places of the per-document cap; both
questions are its search text (BM25 finds either's words; the embedder sees two translations of one question).
The question alone is what is searched: the pair's row place carries it (`Place.question`), so its chunks get it
as `Chunk.search_text`, which is embedded and BM25-indexed instead of the text (stored as metadata `searchText`,
records.search_text); the answer is in the same chunk, so the hit returns the pair; and a pair is never packed with
other pairs nor split from its question (a long answer's later chunks carry the question as their title and are
searched by it too).

Formulas give their cached values (what Excel showed when the file was saved; a formula never calculated
has none and is left out). Bounded: the package checks of `packages`, the text budget on shared strings
and on the records, at most `MAX_COLUMNS` columns, CSV lines of at most `MAX_LINE_CHARS`, and the deadline.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from ..errors import LoaderError
from ..phrases import Phrase
from ..records import ROW, Place
from .extracted import Extracted, Format, clean_extracted, reason
from .limits import TextBudget
from .options import LoadOptions
from .packages import count_text, open_package
from .text import decode_text

MAX_COLUMNS = 1024  # wider is not a table a person reads row by row (Excel's own limit is 16,384)
MAX_LINE_CHARS = 1_000_000  # one CSV line; checked before parsing, so a 50 MB line costs no parse
HEADER_SCAN_ROWS = 20
_SEPARATOR = " · "
_S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
# A Q&A sheet's columns, by name (`_name_of`: case, spaces and a language suffix ignored). The question's names;
# titles only when no column is named a question (a sheet of titles and prose with no answer column is no Q&A).
QUESTION_NAMES = frozenset({"question", "questions", "q", "query", "queries", "ask", "faq", "问题", "问", "提问",
                            "问句", "常见问题", "标准问题", "问题描述", "用户问题", "题目", "疑问", "問題", "提問",
                            "標準問題"})
TITLE_NAMES = ("title", "subject", "topic", "desc", "description", "标题", "主题", "描述", "標題", "主題")
ANSWER_NAMES = frozenset({"answer", "answers", "a", "reply", "response", "答案", "答", "回答", "解答", "答复", "回复",
                          "标准答案", "答覆", "回覆", "標準答案"})
# Answers too loose to make a title a question: `Endpoint, Description, Response` is an API table, not an FAQ.
UNSURE_ANSWERS = frozenset({"a", "response"})
MAX_QA_COLUMNS = 4  # of each kind: a bilingual sheet has two (q_en, q_zh); more are other columns
_LANGUAGES = r"en|eng|english|zh|cn|chs|cht|zh-?cn|zh-?hans|zh-?hant|zh-?tw|tw|hk|chinese"
_LANGUAGE_SUFFIX = re.compile(rf"(?:[_\-.](?:{_LANGUAGES})|[(（\[](?:{_LANGUAGES}|中文|英文|中|英|简体|繁体)[)）\]]"
                              r"|中文|英文|简体|繁体)$")
_LOOKS_LIKE_BLOCK = re.compile(r" {0,3}(?:#{1,6}(?:\s|$)|`{3}|~{3})")  # would be a heading or a fence to the chunker
_WS = re.compile(r"\s+")


class _Writer:
    """The document's text, block by block (blank line between), and the place each block starts."""

    def __init__(self, budget: TextBudget) -> None:
        self.budget = budget
        self.blocks: list[str] = []
        self.places: list[Place] = []
        self.notes: list[Phrase] = []  # what a person should know: which sheets were read as Q&A
        self.size = 0

    def add(self, block: str, number: int, sheet: str, question: str = "") -> None:
        block = clean_extracted(block).strip()
        if not block:
            return
        offset = self.size + (2 if self.blocks else 0)
        self.budget.add(len(block) + 2)
        self.places.append(Place(offset, ROW, number, sheet, question=clean_extracted(question).strip()))
        self.blocks.append(block)
        self.size = offset + len(block)

    def extracted(self, encoding: str) -> Extracted:
        return Extracted("\n\n".join(self.blocks), encoding, tuple(self.places), tuple(self.notes))


# --- .xlsx ----------------------------------------------------------------------------------------

def xlsx_text(data: bytes, name: str, _ext: str, budget: TextBudget, options: LoadOptions) -> Extracted:
    """One record per row, one place per row, and a note per sheet read as Q&A."""
    if data.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        raise LoaderError(f"{name}: is an old Excel .xls file or a password-protected workbook, not an .xlsx; open it "
                          "in Excel and save it as .xlsx without a password", code="unsupported")
    with open_package(data, name, budget, "Excel workbook") as package:
        # openpyxl holds every shared string in memory: their text must be within the limit first.
        count_text(package, "xl/sharedStrings.xml", frozenset({_S + "t"}), TextBudget(name, budget.limit))
    writer = _Writer(budget)
    try:
        import openpyxl
        from openpyxl.utils import get_column_letter

        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        try:
            for sheet in workbook.worksheets:
                sheet.reset_dimensions()  # the stored dimension may claim A1:XFD1048576; read what is there
                rows = ([_cell_text(c) for c in row] for row in sheet.iter_rows())
                _table(enumerate(rows, start=1), name, sheet.title, writer, options, budget,
                       lambda i: f"Column {get_column_letter(i + 1)}")
        finally:
            workbook.close()
    except LoaderError:
        raise
    except Exception as exc:  # openpyxl / zipfile / XML parsers raise many types on damaged files
        raise LoaderError(f"{name}: could not read the workbook ({reason(exc)}); the file may be damaged: open it "
                          "in Excel and save it again as .xlsx", code="undecodable") from exc
    if not writer.blocks:
        raise LoaderError(f"{name}: the workbook has no values in any sheet; nothing to index", code="empty")
    return writer.extracted("xlsx")


XLSX = Format(("xlsx",), xlsx_text)


def _cell_text(cell: object) -> str:
    value = getattr(cell, "value", None)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        number_format = getattr(cell, "number_format", "") or ""
        if number_format.endswith("%"):
            decimals = len(number_format.rsplit(".", 1)[1]) - 1 if "." in number_format else 0
            return f"{value * 100:.{decimals}f}%"
        if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.15g}" if isinstance(value, float) else str(value)
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return _WS.sub(" ", str(value)).strip()


# --- .csv / .tsv ----------------------------------------------------------------------------------

def delimited_text(data: bytes, name: str, ext: str, budget: TextBudget, options: LoadOptions) -> Extracted:
    """A CSV or TSV file as `xlsx_text` reads a sheet, decoded like a text file (UTF-8, GBK, Big5, ...): its encoding
    is the one found."""
    text, encoding = decode_text(data, name)
    _check_lines(text, name)
    delimiter = "\t" if ext == "tsv" else _delimiter(text)
    writer = _Writer(budget)
    try:
        rows = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        cleaned = ([_WS.sub(" ", c).strip() for c in row] for row in rows)
        _table(enumerate(cleaned, start=1), name, "", writer, options, budget, lambda i: f"Column {i + 1}")
    except csv.Error as exc:
        raise LoaderError(f"{name}: is not a readable {ext.upper()} file ({reason(exc)}); check its quoting, or "
                          "save it again from the spreadsheet", code="undecodable") from None
    if not writer.blocks:
        raise LoaderError(f"{name}: the file has no values; nothing to index", code="empty")
    return writer.extracted(encoding)


DELIMITED = Format(("csv", "tsv"), delimited_text)  # delimited text; .xlsx is a package


def _check_lines(text: str, name: str) -> None:
    start, line = 0, 1
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        if end - start > MAX_LINE_CHARS:
            raise LoaderError(f"{name}: line {line:,} is {end - start:,} characters long, more than the "
                              f"{MAX_LINE_CHARS:,} one row may have; it is not a table a person keeps (check the "
                              "file's line endings, or split the data)", code="too_much_text")
        start, line = end + 1, line + 1


def _delimiter(text: str) -> str:
    """The delimiter that splits the first rows into the same number (> 1) of fields most often; "," on a tie."""
    sample = text[:64 * 1024]
    best, best_score = ",", 0
    for delimiter in (",", ";", "\t", "|"):
        try:
            counts = [
                len(r) for r, _ in zip(csv.reader(io.StringIO(sample, newline=""), delimiter=delimiter), range(20))
            ]
        except csv.Error:
            continue
        if not counts:
            continue
        mode = max(set(counts), key=counts.count)
        score = counts.count(mode) * (mode > 1)
        if score > best_score:
            best, best_score = delimiter, score
    return best


# --- the table -> records -----------------------------------------------------------------------

def _table(rows: Iterator[tuple[int, list[str]]], name: str, sheet: str, writer: _Writer, options: LoadOptions,
           budget: TextBudget, column_name: object) -> None:
    """Write one sheet (or CSV) as records: a `# sheet` heading, rows above the header as paragraphs, then one
    record (or Q&A section) per row."""
    buffered: list[tuple[int, list[str]]] = []
    for number, cells in rows:
        cells = _trimmed(cells, name, sheet, number)
        if cells:
            buffered.append((number, cells))
            if len(buffered) >= HEADER_SCAN_ROWS:
                break
    if not buffered:
        return
    widest = max(_filled(c) for _, c in buffered)
    at = next(i for i, (_, c) in enumerate(buffered) if _filled(c) >= min(2, widest) and 2 * _filled(c) >= widest)
    level = ""
    if sheet:
        writer.add("# " + _WS.sub(" ", sheet).strip(), buffered[0][0], sheet)
        level = "#"
    for number, cells in buffered[:at]:
        writer.add(_safe(_SEPARATOR.join(c for c in cells if c)), number, sheet)
    header_number, header_cells = buffered[at]
    headers = [c or column_name(i) for i, c in enumerate(header_cells)]  # type: ignore[operator]
    qa = qa_columns(headers, options.qa_columns)
    if qa is not None:
        question, answer = (", ".join(headers[i] for i in columns) for columns in qa)
        writer.notes.append(Phrase("load.qa_sheet", {"sheet": sheet, "question": question, "answer": answer})
                            if sheet else Phrase("load.qa_table", {"question": question, "answer": answer}))
    body = [*buffered[at + 1:]]

    def remaining() -> Iterable[tuple[int, list[str]]]:
        yield from body
        for number, cells in rows:
            cells = _trimmed(cells, name, sheet, number)
            if cells:
                yield number, cells

    wrote = False
    for count, (number, cells) in enumerate(remaining()):
        if count % 1000 == 999:
            budget.tick(f"row {number:,}" + (f" of sheet {sheet}" if sheet else ""))
        names = headers + [column_name(i) for i in range(len(headers), len(cells))]  # type: ignore[operator]
        if qa is not None and (question := _question(cells, qa)):
            writer.add(_qa_block(names, cells, qa, level), number, sheet, question)
        else:
            writer.add(_safe(_SEPARATOR.join(f"{n}: {v}" for n, v in zip(names, cells) if v)), number, sheet)
        wrote = True
    if not wrote:  # a header and nothing else: the column names are still words someone may look for
        writer.add(_safe(_SEPARATOR.join(c for c in header_cells if c)), header_number, sheet)


def _trimmed(cells: list[str], name: str, sheet: str, number: int) -> list[str]:
    while cells and not cells[-1]:
        cells.pop()
    if len(cells) > MAX_COLUMNS:
        where = f"sheet {sheet!r} row {number:,}" if sheet else f"row {number:,}"
        raise LoaderError(f"{name}: {where} has values in {len(cells):,} columns, more than the {MAX_COLUMNS:,} a "
                          "table may have here; it is not a table a person reads row by row (keep only the columns "
                          "that matter, or transpose it)", code="too_much_text")
    return cells


def _filled(cells: list[str]) -> int:
    return sum(1 for c in cells if c)


class QaColumns(NamedTuple):
    """A Q&A sheet's question columns and answer columns (one each, or one per language)."""

    questions: tuple[int, ...]
    answers: tuple[int, ...]


def _name_of(header: str) -> str:
    """A header as its kind of column: `Q_EN` -> "q", `Question (zh)` -> "question", `问题（中文）` -> "问题"."""
    key = _WS.sub("", header).strip(":：").lower()
    return _LANGUAGE_SUFFIX.sub("", key) or key


def qa_columns(headers: list[str], chosen: tuple[str, str] | None) -> QaColumns | None:
    """The question and answer columns when the headers name both (or `loader.qa-columns` names them), else None.
    Every column named a question (or, when none is, the first kind of title, if an answer is named for sure) and
    every column named an answer:
    `q_en` + `q_zh` + `a_en` + `a_zh` is one pair of each per language."""
    if chosen is not None:
        names = [h.strip().strip(":：").strip().lower() for h in headers]
        if chosen[0] in names and chosen[1] in names:
            return QaColumns((names.index(chosen[0]),), (names.index(chosen[1]),))
    kinds = [_name_of(h) for h in headers]
    answers = tuple(i for i, k in enumerate(kinds) if k in ANSWER_NAMES)[:MAX_QA_COLUMNS]
    questions = tuple(i for i, k in enumerate(kinds) if k in QUESTION_NAMES)[:MAX_QA_COLUMNS]
    sure = any(kinds[i] in ANSWER_NAMES - UNSURE_ANSWERS for i in answers)
    for title in TITLE_NAMES if sure and not questions else ():
        if questions := tuple(i for i, k in enumerate(kinds) if k == title)[:MAX_QA_COLUMNS]:
            break
    return QaColumns(questions, answers) if questions and answers else None


def _question(cells: list[str], qa: QaColumns) -> str:
    """A row's question: its question cells, " / " between languages ("" when it has none)."""
    return " / ".join(cells[i] for i in qa.questions if i < len(cells) and cells[i])


def _qa_block(names: list[str], cells: list[str], qa: QaColumns, level: str) -> str:
    answers = [cells[i] for i in qa.answers if i < len(cells) and cells[i]] or [""]
    lines = [f"{level}# Q: {_question(cells, qa)}", *(f"A: {answer}".rstrip() for answer in answers)]
    lines += [_safe(f"{n}: {v}") for i, (n, v) in enumerate(zip(names, cells))
              if v and i not in qa.questions and i not in qa.answers]
    return "\n".join(lines)


def _safe(line: str) -> str:
    """A record as text the chunker reads as a paragraph: a leading `# ` or fence would make it a heading or
    code, so it is escaped as Markdown escapes it."""
    return "\\" + line if _LOOKS_LIKE_BLOCK.match(line) else line
