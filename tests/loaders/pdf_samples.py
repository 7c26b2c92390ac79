"""PDFs laid out as real ones are, made with reportlab for the PDF loader's tests and bench/docs_pdf.py: a two-column
paper set as TeX sets it, and a Beamer-like slide deck.

The paper draws each word on its own, with the gaps of a justified TeX line (2.0-3.4 pt in 10 pt Times) and no space
characters, as TeX does: a reader that joins glyphs by their gaps (pdfplumber's 3 pt tolerance) loses the narrow
spaces, and one that reads the page's full width merges the two columns' lines. Each page has a ruled figure frame
(two ruled panels of a bar chart side by side: not a table) and a ruled table of 4 rows x 3 columns in the left column.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

# Sentences the bench and the tests look for whole (whitespace-normalised) in what a reader returns.
KEY_SENTENCES = (
    "The gateway drains one availability zone before it restarts the workers of that zone.",
    "Recovery time fell from eleven minutes to ninety seconds after the connection pool was sized per zone.",
    "We measured every restart under production load with synthetic card payments.",
    "A worker that fails its health check twice is replaced rather than restarted.",
    "The scheduler never moves more than a third of the traffic at once.",
    "Operators confirmed the rollback plan before each experiment began.",
    "Latency at the ninety-ninth percentile stayed below two hundred milliseconds throughout.",
    "The remaining failures came from a misconfigured certificate chain in one region.",
    "Retries are bounded by a budget that refills at five percent of the request rate.",
    "Our prototype keeps the settlement ledger consistent across every zone failover.",
    "Canary releases caught four regressions that unit tests had missed.",
    "Future work will extend the controller to the reconciliation batch jobs.",
)
FILLER = (
    "This paragraph describes the deployment in more detail and repeats observations from the field study.",
    "Each service owner reviewed the dashboards and reported the incidents they saw during the period.",
    "The evaluation covers three months of traffic from the shop and its partner banks.",
    "Engineers documented every manual step so that the runbooks could later be automated.",
)
TABLE = (("Zone", "Restart time", "Error rate"), ("eu-west", "41 s", "0.4%"), ("us-east", "38 s", "0.2%"),
         ("ap-south", "55 s", "0.9%"))
FRAME_LABELS = ("(a) Throughput, first zone", "(b) Throughput, second zone")
PAPER_TITLE = "Draining Zones: Fast Recovery for Payment Gateways"

_PAGE = (612.0, 792.0)  # US Letter, as USENIX
_MARGIN, _GUTTER, _SIZE, _LEADING = 54.0, 18.0, 10.0, 12.0
_COLUMN = (_PAGE[0] - 2 * _MARGIN - _GUTTER) / 2


def _paragraphs() -> list[str]:
    """A page's paragraphs: each key sentence between two filler sentences (every page has them all)."""
    return [" ".join((FILLER[n % 4], key, FILLER[(n + 1) % 4])) for n, key in enumerate(KEY_SENTENCES)]


def _lines(text: str, width: float, font: str) -> list[list[str]]:
    from reportlab.pdfbase.pdfmetrics import stringWidth

    lines: list[list[str]] = [[]]
    for word in text.split():
        trial = lines[-1] + [word]
        if lines[-1] and stringWidth(" ".join(trial), font, _SIZE) > width:
            lines.append([word])
        else:
            lines[-1] = trial
    return lines


def _set_line(pdf: Any, words: list[str], x: float, y: float, width: float, last: bool, font: str) -> None:
    """Draw the words one by one in one text object, each placed by its own text matrix, justified (the last line
    of a paragraph at the natural 2.5 pt gap), as TeX places them."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    widths = [stringWidth(w, font, _SIZE) for w in words]
    gap = 2.5 if last or len(words) < 2 else (width - sum(widths)) / (len(words) - 1)
    text = pdf.beginText()
    text.setFont(font, _SIZE)
    for word, w in zip(words, widths):
        text.setTextOrigin(x, y)
        text.textOut(word)
        x += w + gap
    pdf.drawText(text)


class _Column:
    def __init__(self, pdf: Any, x: float, top: float, bottom: float) -> None:
        self.pdf, self.x, self.y, self.bottom = pdf, x, top, bottom

    def paragraph(self, text: str, font: str = "Times-Roman") -> None:
        lines = _lines(text, _COLUMN, font)
        for n, words in enumerate(lines):
            if self.y < self.bottom:
                return
            _set_line(self.pdf, words, self.x, self.y, _COLUMN, n == len(lines) - 1, font)
            self.y -= _LEADING
        self.y -= _LEADING / 2

    def table(self) -> None:
        from reportlab.lib import colors
        from reportlab.platypus import Table, TableStyle

        table = Table([list(r) for r in TABLE], colWidths=[_COLUMN / 3] * 3)
        table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black),
                                   ("FONT", (0, 0), (-1, -1), "Times-Roman", 9)]))
        _, height = table.wrapOn(self.pdf, _COLUMN, 400)
        table.drawOn(self.pdf, self.x, self.y - height + _SIZE)
        self.y -= height + 4
        self.paragraph("Table 1: Restart time and error rate per zone.")

    def figure(self) -> None:
        height = 110.0
        top = self.y + _SIZE
        self.pdf.setLineWidth(0.5)
        half = _COLUMN / 2
        for n, label in enumerate(FRAME_LABELS):  # the frame: two panels side by side, one ruled box each
            x = self.x + n * half
            self.pdf.rect(x, top - height, half, height)
            for k, bar in enumerate((40, 70, 55)):  # bars standing on an axis, apart from the frame
                self.pdf.rect(x + 14 + k * 34, top - height + 20, 20, bar, fill=1)
            self.pdf.setFont("Helvetica", 7)
            self.pdf.drawString(x + 6, top - 12, label)
        self.y -= height + 6
        self.paragraph("Figure 1: Requests per second in each zone during a drain.")


def paper_pdf(pages: int = 1) -> bytes:
    """A USENIX-like two-column paper of `pages` pages, each with a figure frame (right column) and a ruled table
    (left column) among the paragraphs."""
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    pdf = canvas.Canvas(buf, pagesize=_PAGE)
    for page in range(pages):
        top = _PAGE[1] - _MARGIN
        if page == 0:
            pdf.setFont("Times-Bold", 16)
            pdf.drawCentredString(_PAGE[0] / 2, top, PAPER_TITLE)
            top -= 36
        left = _Column(pdf, _MARGIN, top, _MARGIN)
        right = _Column(pdf, _MARGIN + _COLUMN + _GUTTER, top, _MARGIN)
        paragraphs = _paragraphs()
        half = (len(paragraphs) + 1) // 2
        for n, text in enumerate(paragraphs[:half]):
            left.paragraph(text)
            if n == 0:
                left.table()
        for n, text in enumerate(paragraphs[half:]):
            right.paragraph(text)
            if n == 0:
                right.figure()
        pdf.setFont("Times-Roman", 9)
        pdf.drawCentredString(_PAGE[0] / 2, 30, str(page + 1))
        pdf.showPage()
    pdf.save()
    return buf.getvalue()


def paper_source(pages: int = 1) -> str:
    """Every word the paper draws, for the run-on-word count (a long word of the source is not run-on)."""
    words = [PAPER_TITLE, *FRAME_LABELS, "Table 1: Restart time and error rate per zone.",
             "Figure 1: Requests per second in each zone during a drain."]
    words += [" ".join(row) for row in TABLE]
    words += _paragraphs()
    return " ".join(words)


# --- a Beamer-like deck -------------------------------------------------------------------------------

SLIDES = (
    ("Draining Zones", ["Fast recovery for payment gateways", "Li Wei and Ana Costa", "Operations Summit 2026"]),
    ("Why drain a zone first", ["Restarts under load drop card payments", "A drained zone restarts in seconds",
                                "Traffic moves to the other zones"]),
    ("The controller", ["Watches the health checks of every worker", "Moves at most a third of the traffic at once",
                        "Replaces a worker that fails twice"]),
    ("Results", ["Recovery fell from eleven minutes to ninety seconds", "No settlement was lost in any failover"]),
    ("Lessons", ["Size the connection pool per zone", "Keep the rollback plan next to the dashboard"]),
    ("Questions", ["Thank you for listening"]),
)
BOXED_SLIDE = 4  # the slide (1-based) whose bullets sit in a Beamer block: a ruled title bar over a ruled body
BLOCK_TITLE = "Measured in production"
DECK_SIZE = (128 * 72 / 25.4, 96 * 72 / 25.4)  # Beamer's default 128 x 96 mm


def deck_pdf(slides: Sequence[tuple[str, Sequence[str]]] = SLIDES, size: tuple[float, float] = DECK_SIZE) -> bytes:
    """One landscape page per slide: a navigation line at the top, the title in large bold type, the bullets, a
    footline with the talk's title and the slide number; slide `BOXED_SLIDE`'s bullets in a block."""
    from reportlab.pdfgen import canvas

    width, height = size
    buf = io.BytesIO()
    pdf = canvas.Canvas(buf, pagesize=size)
    for number, (title, bullets) in enumerate(slides, start=1):
        pdf.setFont("Helvetica", 5)
        pdf.drawString(12, height - 8, "Introduction  Design  Evaluation")
        pdf.setFont("Helvetica-Bold", 14 if number > 1 else 18)
        pdf.drawString(14, height - 34, title)
        if number == BOXED_SLIDE:  # a Beamer block around the bullets: a ruled title bar on a ruled body
            x0, y0, x1, y1 = 16, height - 54 - 16 * len(bullets), width - 16, height - 54
            for line in ((x0, y0, x1, y0), (x0, y0, x0, y1 + 14), (x1, y0, x1, y1 + 14), (x0, y1, x1, y1),
                         (x0, y1 + 14, x1, y1 + 14)):
                pdf.line(*line)  # five strokes, as a theme draws a block
            pdf.setFont("Helvetica-Bold", 8)
            pdf.drawString(20, y1 + 4, BLOCK_TITLE)
        pdf.setFont("Helvetica", 10)
        y = height - 62
        for bullet in bullets:
            pdf.drawString(20, y, "\u2022 " + bullet if number > 1 else bullet)
            y -= 16
        pdf.setFont("Helvetica", 5)
        pdf.drawString(12, 6, "Li Wei (Payments)")
        pdf.drawRightString(width - 12, 6, f"{number} / {len(slides)}")
        pdf.showPage()
    pdf.save()
    return buf.getvalue()


# --- measures (the tests and bench/docs_pdf.py) -----------------------------------------------------------

_LETTERS = re.compile(r"[^\W\d_]+")


def run_on_words(text: str, source: str) -> tuple[int, int]:
    """(run-on words, words) in `text`. A word is a run of letters (digits, punctuation and spaces end it); a run-on
    word is one of 20 letters or more that is not a word of `source`, the text the PDF was made from: words whose
    spaces were lost ("reportedtheincidentstheysaw"), which neither a search nor a reader finds."""
    known = set(_LETTERS.findall(source))
    words = _LETTERS.findall(text)
    return sum(1 for w in words if len(w) >= 20 and w not in known), len(words)


def key_recall(text: str, sentences: Sequence[str], copies: int = 1) -> float:
    """Share of the key sentences found whole in `text` (whitespace-normalised), each expected `copies` times."""
    flat = " ".join(text.split())
    return sum(min(flat.count(s), copies) for s in sentences) / (len(sentences) * copies)


def text_pdf_sized(pages: Sequence[str], size: tuple[float, float]) -> bytes:
    """One page of `size` points per string, its lines in Helvetica."""
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    pdf = canvas.Canvas(buf, pagesize=size)
    for text in pages:
        y = size[1] - 60
        for line in text.split("\n"):
            pdf.drawString(40, y, line)
            y -= 16
        pdf.showPage()
    pdf.save()
    return buf.getvalue()
