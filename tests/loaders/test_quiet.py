"""What the reading libraries warn (issue 39): pypdf's logger ("fontTools is required ...", once per font per page)
and openpyxl's `warnings` ("Workbook contains no default style", printed with its install path) are heard per
document and thread, counted once per message in the document's notes and the log; `ingest --quiet` in a real
subprocess prints none of it, and its `--json` notes and `<data>/logs/loaders.log` hold each once with its count."""

from __future__ import annotations

import io
import json
import logging
import re
import subprocess
import sys
import threading
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_core.loaders import load_bytes
from rag_core.loaders.quiet import heard
from tests.helpers import REPO

PAGES = 3
FONT_NOTE = re.compile(r"pypdf warned 3×: fontTools is required to fully parse the encoding of a CFF Type1 font in "
                       r"font dictionary …, but is not installed")
STYLE_NOTE = "openpyxl warned 1×: Workbook contains no default style, apply openpyxl's default"
LIBRARY_WORDS = ("fontTools", "openpyxl", "site-packages", "UserWarning", "WARNING")


def cff_pdf(pages: int = PAGES) -> bytes:
    """A PDF whose Type1 font has an embedded CFF program (FontFile3, Subtype Type1C) and no ToUnicode map, as many
    PDFs made by typesetting tools do: pypdf without fontTools warns once per page when it reads the text."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf)
    for page in range(pages):
        c.setFont("Helvetica", 12)
        c.drawString(72, 720, f"Page {page + 1}: the disk of the database host is full.")
        c.showPage()
    c.save()
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(buf.getvalue())))
    for written in writer.pages:
        for font in written["/Resources"]["/Font"].values():  # type: ignore[index]
            program = DecodedStreamObject()
            program.set_data(b"\x01\x00\x04\x01")
            program[NameObject("/Subtype")] = NameObject("/Type1C")
            descriptor = DictionaryObject({NameObject("/Type"): NameObject("/FontDescriptor"),
                                           NameObject("/FontName"): NameObject("/Helvetica"),
                                           NameObject("/FontFile3"): writer._add_object(program)})
            font.get_object()[NameObject("/FontDescriptor")] = writer._add_object(descriptor)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def styleless_xlsx() -> bytes:
    """A workbook whose stylesheet has no named cell styles (as some exporters write it): openpyxl warns that it
    applies its own default."""
    import openpyxl

    wb = openpyxl.Workbook()
    wb.active.append(["Alert", "Threshold"])
    wb.active.append(["DiskFull", "90%"])
    buf = io.BytesIO()
    wb.save(buf)
    source, out = zipfile.ZipFile(io.BytesIO(buf.getvalue())), io.BytesIO()
    with zipfile.ZipFile(out, "w") as package:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "xl/styles.xml":
                data = re.sub(rb"<cellStyles.*?</cellStyles>", b"", data, flags=re.S)
            package.writestr(item, data)
    return out.getvalue()


def test_a_document_hears_its_warnings_once_each_with_the_count(capfd: pytest.CaptureFixture[str]) -> None:
    for _ in range(2):  # the second read hears openpyxl again, though Python shows a warning once per place
        pdf = load_bytes(cff_pdf(), "fonts.pdf")
        xlsx = load_bytes(styleless_xlsx(), "alerts.xlsx")
        assert len(pdf.notes) == 1 and FONT_NOTE.match(pdf.notes[0]), pdf.notes
        assert pdf.note_phrases[0].params["count"] == PAGES and pdf.note_phrases[0].params["library"] == "pypdf"
        assert xlsx.notes == (STYLE_NOTE,)
        assert "Page 3: the disk of the database host is full." in pdf.text
    assert capfd.readouterr().out == ""


class Kept(logging.Handler):
    """On the root logger: the records that reached it (pytest's caplog also sits on non-propagating loggers)."""

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def root() -> Iterator[Kept]:
    kept, logger = Kept(), logging.getLogger()
    logger.addHandler(kept)
    try:
        yield kept
    finally:
        logger.removeHandler(kept)


def test_the_log_says_each_once_with_the_count(root: Kept) -> None:
    load_bytes(cff_pdf(), "fonts.pdf")
    assert [r.name for r in root.records] == ["rag_core.loaders.quiet"]  # pypdf's own records never reach root
    assert root.records[0].getMessage().startswith("fonts.pdf: pypdf warned 3 times: WARNING: fontTools is required")


def test_only_the_reading_thread_is_heard(root: Kept) -> None:
    """A thread reading a document hears its own warnings; another thread's, at the same moment, go where they went."""
    inside, go = threading.Event(), threading.Event()
    said: list[list[tuple[str, str, int]]] = []

    def reader() -> None:
        with heard("a.pdf") as h:
            inside.set()
            assert go.wait(60)
            logging.getLogger("pypdf._cmap").warning("in the reading thread %s", "x")
            warnings.warn("raised while reading", UserWarning, stacklevel=1)
        said.append([(k.library, k.message, k.count) for k in h.kinds.values()])

    thread = threading.Thread(target=reader)
    thread.start()
    assert inside.wait(60)
    logging.getLogger("pypdf._reader").warning("outside any read")
    with warnings.catch_warnings(record=True) as elsewhere:  # this thread's warning is not heard by the reader
        warnings.simplefilter("always")
        warnings.warn("raised elsewhere", UserWarning, stacklevel=1)
    go.set()
    thread.join(60)
    assert said == [[("pypdf", "in the reading thread …", 1), ("UserWarning", "raised while reading", 1)]]
    assert [str(w.message) for w in elsewhere] == ["raised elsewhere"]
    messages = [r.getMessage() for r in root.records if r.name.startswith("pypdf")]
    assert messages == ["outside any read"]  # as it propagated before; the reading thread's was heard instead


def test_documents_read_at_once_in_threads_each_hear_their_own() -> None:
    data = {"one.pdf": cff_pdf(1), "two.pdf": cff_pdf(2), "three.pdf": cff_pdf(3), "alerts.xlsx": styleless_xlsx()}
    notes: dict[str, tuple[str, ...]] = {}
    start = threading.Barrier(len(data))

    def read(name: str) -> None:
        start.wait(60)
        notes[name] = load_bytes(data[name], name).notes

    threads = [threading.Thread(target=read, args=(name,)) for name in data]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert {name: [re.sub(r":.*", "", n) for n in found] for name, found in notes.items()} == {
        "one.pdf": ["pypdf warned 1×"], "two.pdf": ["pypdf warned 2×"], "three.pdf": ["pypdf warned 3×"],
        "alerts.xlsx": ["openpyxl warned 1×"]}


@pytest.mark.milvus
def test_a_quiet_ingest_prints_no_library_warning(tmp_path: Path) -> None:
    """`python -m rag_core ingest --quiet` in a real subprocess: nothing of pypdf's or openpyxl's on the terminal;
    the report's notes and the log hold each once with its count."""
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "fonts.pdf").write_bytes(cff_pdf())
    (tmp_path / "files" / "alerts.xlsx").write_bytes(styleless_xlsx())
    data = tmp_path / "data"

    def ingest(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rag_core", "--data-dir", str(data), "ingest",
                               str(tmp_path / "files"), "--quiet", "--force", *extra],
                              cwd=REPO, capture_output=True, text=True, timeout=600)

    done = ingest("--json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    reports = {r["doc_id"]: r for r in json.loads(done.stdout)}  # stdout is the one JSON document
    assert len(reports["fonts.pdf"]["notes"]) == 1 and FONT_NOTE.match(reports["fonts.pdf"]["notes"][0])
    assert reports["alerts.xlsx"]["notes"] == [STYLE_NOTE]
    assert [p["params"]["count"] for p in reports["fonts.pdf"]["note_phrases"]] == [PAGES]
    log = (data / "logs" / "loaders.log").read_text(encoding="utf-8").splitlines()
    assert len(log) == 2 and sum("fonts.pdf: pypdf warned 3 times: WARNING: fontTools is required" in line
                                 for line in log) == 1
    assert sum("alerts.xlsx: openpyxl warned 1 time: UserWarning: Workbook contains no default style" in line
               for line in log) == 1

    done = ingest()  # the text report: one note line each, nothing on stderr
    assert done.returncode == 0 and done.stderr == ""
    notes = [line.strip() for line in done.stdout.splitlines() if line.strip().startswith("note: ")]
    assert [n for n in notes if "warned" in n] == [f"note: {STYLE_NOTE}", notes[-1]] and FONT_NOTE.search(notes[-1])
    assert not any(word in done.stdout.replace(STYLE_NOTE, "") for word in ("site-packages", "UserWarning"))
    assert len((data / "logs" / "loaders.log").read_text(encoding="utf-8").splitlines()) == 4
