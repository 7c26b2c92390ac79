"""Documents made on the spot, for the loader tests and bench/formats.py: pages rendered from known text (so
OCR's errors can be counted), scanned and mixed PDFs, a PDF with a table across a page break, a two-sheet
workbook with a Q&A sheet, a GBK CSV, a three-slide deck with notes. Each generator is deterministic."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
CJK_FONT = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")  # Debian's fonts-noto-cjk

PAGE_LINES = (
    "Payment gateway runbook: restart the workers",
    "支付网关运行手册：重启工作进程",
    "When the error rate exceeds 2 percent, drain one zone first.",
    "错误率超过百分之二时，先摘除一个可用区的流量。",
    "Check the database connection pool before you restart.",
    "重启之前检查数据库连接池的使用情况。",
)


def render_page(lines: Sequence[str] = PAGE_LINES, size: tuple[int, int] = (1240, 1754), font_px: int = 30):
    """A white page (A4 at 150 dpi by default) with `lines` drawn in black, one per line, as a scan shows them."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(str(CJK_FONT), font_px)
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    y = font_px * 3
    for line in lines:
        draw.text((font_px * 3, y), line, font=font, fill="black")
        y += int(font_px * 2.2)
    return image


def png_bytes(image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def scanned_pdf(images: Sequence, dpi: int = 150) -> bytes:
    """A PDF whose pages are only images (no text layer), as a scanner makes."""
    buf = io.BytesIO()
    images[0].save(buf, format="PDF", resolution=dpi, save_all=True, append_images=list(images[1:]))
    return buf.getvalue()


def patch_package(data: bytes, replace: dict[str, tuple[bytes, bytes]] | None = None,
                  add: dict[str, bytes] | None = None) -> bytes:
    """A copy of a ZIP package with some parts' bytes replaced (part -> (old, new)) or parts added."""
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = src.read(info)
            if replace and info.filename in replace:
                old, new = replace[info.filename]
                assert old in body, (info.filename, old)
                body = body.replace(old, new)
            dst.writestr(info.filename, body)
        for name, body in (add or {}).items():
            dst.writestr(name, body)
    return out.getvalue()


ALERTS = (
    ("HighCPUUsage", 0.85, "runbooks/cpu_high.md"),
    ("DiskAlmostFull", 0.9, "runbooks/disk_full.md"),
    ("PaymentErrors", 0.02, "runbooks/payments.md"),
)
FAQ = (
    ("如何重启支付服务？", "执行 systemctl restart pay-gateway，然后观察五分钟错误率。", "支付"),
    (
        "How do I rotate the API keys?",
        "Create the new key, deploy it, then revoke the old one after one day.",
        "security",
    ),
)


def workbook() -> bytes:
    """Two sheets: "Alerts" (a table: percent formats, a formula with its cached value, a title row above the
    header) and "FAQ" (问题 / 答案 / 分类: a Q&A sheet)."""
    import openpyxl

    wb = openpyxl.Workbook()
    alerts = wb.active
    alerts.title = "Alerts"
    alerts.append(["Production alerts (reviewed 2025-03)"])
    alerts.append(["Alert", "Threshold", "Runbook", "Score"])
    for row, (name, threshold, runbook) in enumerate(ALERTS, start=3):
        alerts.append([name, threshold, runbook, f"=B{row}*100"])
        alerts[f"B{row}"].number_format = "0%"
    faq = wb.create_sheet("FAQ")
    faq.append(["问题", "答案", "分类"])
    for question, answer, category in FAQ:
        faq.append([question, answer, category])
    buf = io.BytesIO()
    wb.save(buf)
    # openpyxl writes formulas without a cached value; Excel would have saved the value it showed.
    cached = {f"<f>B{r}*100</f><v></v>".encode(): f"<f>B{r}*100</f><v>{round(t * 100)}</v>".encode()
              for r, (_, t, _) in enumerate(ALERTS, start=3)}
    data = buf.getvalue()
    for old, new in cached.items():
        data = patch_package(data, {"xl/worksheets/sheet1.xml": (old, new)})
    return data


GBK_CSV = "告警名称,阈值,处理手册\nCPU使用率过高,85%,runbooks/cpu.md\n磁盘空间不足,90%,runbooks/disk.md\n"


def deck() -> bytes:
    """Three slides with speaker notes: bullets with a sub-point, a table, and a slide with a title and notes."""
    from pptx import Presentation
    from pptx.util import Inches

    prs = Presentation()
    s1 = prs.slides.add_slide(prs.slide_layouts[1])
    s1.shapes.title.text = "Incident 2025-03-01: payment errors"
    body = s1.placeholders[1].text_frame
    body.text = "Error rate rose to 7% for 20 minutes"
    sub = body.add_paragraph()
    sub.text = "Only zone B was affected"
    sub.level = 1
    s1.notes_slide.notes_text_frame.text = "Start with the timeline; the pager fired at 14:02."
    s2 = prs.slides.add_slide(prs.slide_layouts[5])
    s2.shapes.title.text = "Timeline"
    rows = (
        ("Time", "Event"),
        ("14:02", "Pager fired"),
        ("14:10", "Rollback started"),
        ("14:22", "Errors back to 0.1%"),
    )
    table = s2.shapes.add_table(len(rows), 2, Inches(1), Inches(2), Inches(6), Inches(2)).table
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    s2.notes_slide.notes_text_frame.text = "The rollback took twelve minutes."
    s3 = prs.slides.add_slide(prs.slide_layouts[5])
    s3.shapes.title.text = "Action items"
    s3.notes_slide.notes_text_frame.text = "Owners: Li Wei for the canary, Ana for the alert threshold."
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()


TABLE_ROWS = 60


def table_pdf(rows: int = TABLE_ROWS) -> bytes:
    """A ruled table (Alert, Threshold, Severity, Runbook) that starts on page 1 and runs on to page 2, with
    text before and after it; the header row is not repeated on page 2."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Table, TableStyle

    styles = getSampleStyleSheet()
    data = [["Alert", "Threshold", "Severity", "Runbook"]]
    data += [[f"Alert{i:03d}", f"{50 + i % 50}%", ("warning", "critical")[i % 2], f"runbooks/alert{i:03d}.md"]
             for i in range(rows)]
    table = Table(data)
    table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black)]))
    story = [Paragraph("Alert thresholds", styles["Heading1"]),
             Paragraph("Every production alert with its threshold and runbook. " * 12, styles["BodyText"]),
             table, Paragraph("The end of the catalogue.", styles["BodyText"])]
    buf = io.BytesIO()
    SimpleDocTemplate(buf, pagesize=A4).build(story)
    return buf.getvalue()


def text_pdf(pages: Sequence[str]) -> bytes:
    """One page of Helvetica text per string."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    pdf = canvas.Canvas(buf, pagesize=A4)
    for text in pages:
        y = 780
        for line in text.split("\n"):
            pdf.drawString(72, y, line)
            y -= 16
        pdf.showPage()
    pdf.save()
    return buf.getvalue()


# (page, outline depth or 0 for body text, line): a manual with chapters and sections over three pages
OUTLINED = (
    (1, 1, "Payment gateway"),
    (1, 0, "The gateway takes card payments from the shop and hands them to the bank."),
    (1, 2, "Restarting the workers"),
    (1, 0, "Drain one zone first, then restart the workers of that zone."),
    (1, 0, "Restarting the workers takes about two minutes per zone."),
    (2, 2, "Rotating keys"),
    (2, 0, "Create the new key, deploy it, then revoke the old key after one day."),
    (2, 3, "Emergency   rotation"),
    (2, 0, "When a key leaks, revoke it at once and accept the failed payments."),
    (3, 1, "Disk space"),
    (3, 0, "Delete old log files under /var/log and rotate them with logrotate."),
)


def outlined_pdf(lines: Sequence[tuple[int, int, str]] = OUTLINED,
                 outline: Sequence[tuple[int, int, str]] = ()) -> bytes:
    """Pages of Helvetica lines (`lines`: page, depth, text) with an outline: an entry (bookmark) for each line of
    depth > 0 at that depth, plus the `outline` entries (page, depth, title) given, after the page's own."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    pdf = canvas.Canvas(buf, pagesize=A4)
    pages = sorted({page for page, _, _ in lines})
    for number in pages:
        y = 780
        entries = [(d, t) for page, d, t in lines if page == number and d] + \
            [(d, t) for page, d, t in outline if page == number]
        for _, _, text in (line for line in lines if line[0] == number):
            pdf.drawString(72, y, " ".join(text.split()))
            y -= 16
        for n, (depth, title) in enumerate(entries):
            key = f"p{number}-{n}"
            pdf.bookmarkPage(key)
            pdf.addOutlineEntry(title, key, level=depth - 1)
        pdf.showPage()
    pdf.save()
    return buf.getvalue()


def mixed_pdf(text_page: str, image) -> bytes:
    """Page 1 (A4) has a text layer; page 2 is only an image (scanned at 150 dpi)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    pdf = canvas.Canvas(buf, pagesize=A4)
    pdf.drawString(72, 780, text_page)
    pdf.showPage()
    width, height = (px * 72 / 150 for px in image.size)  # the scan's page: the image at 150 dpi
    pdf.setPageSize((width, height))
    pdf.drawImage(ImageReader(image), 0, 0, width=width, height=height)
    pdf.showPage()
    pdf.save()
    return buf.getvalue()


def cer(got: str, truth: str) -> float:
    """Character error rate: edit distance over the truth's length, whitespace ignored (OCR's spacing between
    Chinese and Latin text is not an error a search notices)."""
    a, b = "".join(got.split()), "".join(truth.split())
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1] / max(1, len(b))


def png_header(width: int, height: int) -> bytes:
    """A PNG that claims `width` x `height` pixels (a few bytes of pixels: decoding it would need gigabytes)."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b"")
    )


LAUGHS = (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
          + b"".join(b'<!ENTITY lol%d "%s">' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
                     for i in range(1, 10))
          + b']><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>&lol9;</t></si></sst>')


def zip_bomb(package: bytes, part: str) -> bytes:
    """The package plus an XML part of 17 MB of blanks (17 KB compressed): over the markup allowed for a
    document of 1,000 characters (16 MB at least)."""
    return patch_package(package, add={part: b"<x>" + b" " * (17 * 1024 * 1024) + b"</x>"})
