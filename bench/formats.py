"""The formats beyond Markdown: OCR accuracy and speed, ingest throughput per format, and the extractors the
loaders were chosen from.

1. OCR (rapidocr-onnxruntime, the `ocr` extra) on pages rendered here from known Chinese and English text, so
   the truth is known: character error rate (edit distance over the truth's characters, whitespace ignored)
   and pages per second, through `load_bytes` as ingest calls it (a PDF page is rendered by pypdfium2 first).
2. Ingest throughput per format, end to end through `Ingestor` into Milvus Lite with the local embedder
   (chunks 800/100), next to the same text as Markdown in the same run and to the published Markdown figure
   (bench/results/ingest.json); the share of the time spent reading the files.
3. The extractors: HTML main-content extraction on a Confluence export, a MkDocs page and a MediaWiki page with
   an 80-row table (tests/loaders/fixtures), scored on kept sentences, boilerplate left in, Markdown headings,
   table rows under their header, list items; and PDF text extraction speed. Candidates that are not installed
   are left out (they are not dependencies: `pip install trafilatura readability-lxml markdownify html2text
   inscriptis resiliparse` to rerun the comparison).

The documents are made on the spot by tests/loaders/samples.py (the loader tests' generators) and below.
"""

from __future__ import annotations

import io
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import best_of, load, log, main, record_and_print, section, table
from tests.loaders.samples import FIXTURES, cer, png_bytes, render_page, scanned_pdf, table_pdf

EN = ("When the payment gateway returns more errors than usual, first check the dashboard for the zone where the "
      "errors concentrate, then compare the start of the errors with the release calendar.")
ZH = "支付网关错误率升高时，先在监控面板中确认错误集中的可用区，再把错误开始的时间与发布日历对照。"


# --- 1. OCR ---------------------------------------------------------------------------------------

def dense_lines(n: int) -> list[str]:
    words = EN.split()
    out = []
    for i in range(n):
        if i % 2:
            out.append(ZH[(i * 7) % 20:(i * 7) % 20 + 24])
        else:
            out.append(" ".join(words[(i * 3) % 20:(i * 3) % 20 + 9]))
    return out


def ocr_cases(quick: bool) -> list[tuple[str, str, bytes, str, int]]:
    """(case, file name, bytes, truth, pages)."""
    short = ["Restart the payment gateway workers", "重启支付网关的工作进程", "Check the database pool first",
             "先检查数据库连接池"]
    dense = dense_lines(12 if quick else 26)  # 26 lines of 10 pt fill an A4 page with margins
    cases = [("screenshot 900x420, 4 lines", "shot.png", png_bytes(render_page(short, (900, 420), 30)),
              "".join(short), 1)]
    a4_150 = render_page(dense, (1240, 1754), 26)  # ~10 pt text scanned at 150 dpi
    cases.append((f"A4 page at 150 dpi, {len(dense)} lines (PNG)", "page.png", png_bytes(a4_150), "".join(dense), 1))
    pages = 1 if quick else 3
    a4_300 = render_page(dense, (2480, 3508), 52)  # the same page scanned at 300 dpi, inside a PDF
    cases.append((f"scanned PDF, {pages} A4 pages at 300 dpi, rendered at 200 dpi", "scan.pdf",
                  scanned_pdf([a4_300] * pages, dpi=300), "".join(dense) * pages, pages))
    return cases


def measure_ocr(quick: bool) -> list[dict[str, Any]]:
    from rag_core.loaders import load_bytes, ocr_available

    if not ocr_available():
        raise SystemExit('bench.formats needs the OCR extra: pip install ".[ocr]"')
    cases = ocr_cases(quick)
    load_bytes(cases[0][2], cases[0][1])  # the model loads once, outside the timings
    rows = []
    for case, name, data, truth, pages in cases:
        log(f"formats: OCR {case} ...")
        seconds, doc = best_of(lambda: load_bytes(data, name), 1 if quick else 2)
        rows.append({"case": case, "pages": pages, "cer": cer(doc.text, truth), "pages_s": pages / seconds,
                     "chars": len("".join(truth.split()))})
    return rows


# --- 2. ingest per format -------------------------------------------------------------------------

def report_text(sections: int) -> str:
    """Markdown of a report: sections of English and Chinese paragraphs (the same text every format holds)."""
    parts = []
    for s in range(sections):
        parts.append(f"## Incident review {s + 1}")
        for i in range(3):
            parts.append(f"[{s + 1}.{i}] {EN} {EN}")
            parts.append(f"（{s + 1}.{i}）{ZH}{ZH}")
    return "\n\n".join(parts)


def report_pdf(sections: int) -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))  # a standard CJK font: no file needed
    styles = getSampleStyleSheet()
    zh = ParagraphStyle("zh", parent=styles["BodyText"], fontName="STSong-Light")
    story = []
    for s in range(sections):
        story.append(Paragraph(f"Incident review {s + 1}", styles["Heading2"]))
        for i in range(3):
            story.append(Paragraph(f"[{s + 1}.{i}] {EN} {EN}", styles["BodyText"]))
            story.append(Paragraph(f"（{s + 1}.{i}）{ZH}{ZH}", zh))
        story.append(PageBreak())
    buf = io.BytesIO()
    SimpleDocTemplate(buf, pagesize=A4).build(story)
    return buf.getvalue()


def report_html(sections: int) -> bytes:
    nav = "".join(f"<li><a href='/p{i}'>Page {i}</a></li>" for i in range(40))
    body = "".join(f"<h2>Incident review {s + 1}</h2>" + "".join(f"<p>[{s + 1}.{i}] {EN} {EN}</p><p>（{s + 1}.{i}）"
                                                                     f"{ZH}{ZH}</p>" for i in range(3))
                   for s in range(sections))
    page = (f"<html><head><title>Reviews</title><script>{'var x=1;' * 500}</script></head><body><nav><ul>{nav}</ul>"
            f"</nav><main><h1>Incident reviews</h1>{body}</main><footer>(c) 2025 Example</footer></body></html>")
    return page.encode()


def report_pptx(sections: int) -> bytes:
    from pptx import Presentation

    prs = Presentation()
    for s in range(sections):
        slide = prs.slides.add_slide(prs.slide_layouts[1])
        slide.shapes.title.text = f"Incident review {s + 1}"
        frame = slide.placeholders[1].text_frame
        frame.text = f"[{s + 1}.0] {EN}"
        for i in (1, 2):
            frame.add_paragraph().text = f"[{s + 1}.{i}] {EN}"
        slide.notes_slide.notes_text_frame.text = ZH * 3
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()


def alert_rows(n: int) -> list[list[str]]:
    services = ["api-gateway", "payments", "orders", "search", "auth", "inventory", "billing", "notifications"]
    return [[f"{services[i % 8]}-{i:05d}", f"{50 + i % 50}%", ("warning", "critical")[i % 2],
             f"runbooks/{services[i % 8]}.md", f"{ZH[:12]} {EN[:60]}"] for i in range(n)]


HEADERS = ["Alert", "Threshold", "Severity", "Runbook", "Notes"]


def alerts_xlsx(n: int) -> bytes:
    import openpyxl

    wb = openpyxl.Workbook(write_only=True)
    sheet = wb.create_sheet("Alerts")
    sheet.append(HEADERS)
    for row in alert_rows(n):
        sheet.append(row)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def alerts_csv(n: int) -> bytes:
    import csv

    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(HEADERS)
    writer.writerows(alert_rows(n))
    return buf.getvalue().encode("gbk")


def ingest_cases(quick: bool) -> list[tuple[str, str, Callable[[], bytes], int]]:
    """(format, extension, make one file, files)."""
    sections, rows, files = (4, 500, 3) if quick else (30, 3000, 5)
    return [
        ("Markdown (the same report)", "md", lambda: report_text(sections).encode(), files),
        ("HTML page", "html", lambda: report_html(sections), files),
        ("PDF, text layer", "pdf", lambda: report_pdf(sections), files),
        ("PDF, ruled table across pages", "pdf", lambda: table_pdf(60 if quick else 300), files),
        ("PowerPoint deck", "pptx", lambda: report_pptx(sections), files),
        ("Excel sheet (rows)", "xlsx", lambda: alerts_xlsx(rows), 1),
        ("CSV in GBK (rows)", "csv", lambda: alerts_csv(rows), 1),
    ]


def measure_ingest(quick: bool) -> list[dict[str, Any]]:
    from rag_core.embedding.local import LocalUSEEmbedder
    from rag_core.ingest import Ingestor
    from rag_core.loaders import load_bytes
    from rag_core.store import MilvusStore

    embedder = LocalUSEEmbedder()
    embedder.embed_documents(["warm up"])

    def ingest_seconds(uploads: list[tuple[str, bytes]]) -> tuple[float, int]:
        with tempfile.TemporaryDirectory() as tmp:
            store = MilvusStore(str(Path(tmp) / "bench.db"), "bench")
            store.open(embedder.name, embedder.dim)
            started = time.perf_counter()
            reports = Ingestor(store, embedder).ingest_uploads(uploads)
            seconds = time.perf_counter() - started
            store.close()
        assert all(r.status == "added" for r in reports), reports[:2]
        return seconds, sum(r.chunks for r in reports)

    cases = [(label, [(f"doc{i}.{ext}", data) for i in range(files)]) for label, ext, make, files in ingest_cases(quick)
             for data in [make()]]
    ingest_seconds(cases[0][1][:1])  # Milvus Lite, the BM25 analyzer and the embedder warm, outside the timings
    best: dict[str, tuple[float, int]] = {}
    for _ in range(1 if quick else 2):  # each case twice, alternating, the best kept: other load hits all alike
        for label, uploads in cases:
            log(f"formats: ingest {label} ...")
            seconds, chunks = ingest_seconds(uploads)
            best[label] = min(best.get(label, (seconds, chunks)), (seconds, chunks))
    rows = []
    for label, uploads in cases:
        seconds, chunks = best[label]
        size = sum(len(d) for _, d in uploads)
        read_s, _ = best_of(lambda: [load_bytes(d, n) for n, d in uploads], 2)
        rows.append({"format": label, "files": len(uploads), "mb": size / 1e6, "chunks": chunks,
                     "chunks_s": chunks / seconds, "read_share": read_s / seconds, "read_mb_s": size / 1e6 / read_s})
    return rows


# --- 3. the extractors ----------------------------------------------------------------------------

HTML_EXPECT: dict[str, dict[str, Any]] = {
    "confluence_runbook": dict(
        main=[
            "排查与恢复步骤",
            "PayGatewayHighErrorRate",
            "Checkout requests time out",
            "商户反馈支付回调延迟",
            "Grafana payment dashboard",
            "SHOW PROCESSLIST",
            "Release calendar",
            "不要在高峰期",
            "kubectl rollout undo",
            "kubectl rollout status",
            "恢复后在工单中记录根因",
            "值班经理",
            "p99 latency 延迟",
        ],
        noise=[
            "Document generated by Confluence",
            "Atlassian",
            "Created by",
            "grafana-pay.png",
            "rbtoc",
            "Runbooks 运行手册",
        ],
        headings=["Symptoms 症状", "Diagnosis 诊断", "Recovery 恢复", "Rollback 回滚", "Thresholds 阈值"],
        header=["Metric 指标", "Warning", "Critical"],
        rows=3,
        lists=["告警", "Checkout requests", "打开"],
    ),
    "docs_page": dict(
        main=[
            "Each worker process pulls jobs",
            "metrics reference",
            "queue depth",
            "payments",
            "longer than 30 seconds",
            "Do not scale beyond 64 workers",
            "HorizontalPodAutoscaler",
            "maxReplicas",
            "helm upgrade queue",
            "kubectl get hpa",
            "40 jobs per second",
            "slow jobs",
        ],
        noise=[
            "Skip to content",
            "Deploying to Kubernetes",
            "Copyright",
            "Edit this page",
            "Installation",
            "Changelog",
            "gtag",
            "Copy to clipboard",
            "User guide",
            "Table of contents",
        ],
        headings=["Scaling workers", "When to scale", "Autoscaling", "Limits"],
        header=[],
        rows=0,
        lists=["the queue depth", "the oldest job", "Apply the chart", "Watch the replicas"],
    ),
    "wiki_alert_table": dict(
        main=[
            "This page lists every production alert",
            "api-gatewayHighCPUUsage",
            "notificationsCertExpiring",
            "Runbook:payments",
            "Pages the on-call engineer",
            "Handled in working hours",
        ],
        noise=[
            "Jump to navigation",
            "Navigation menu",
            "Privacy policy",
            "last edited",
            "Random page",
            "Retrieved from",
            "read-only on Saturday",
            "NewPP",
            "wgPageName",
            "[edit]",
            "View history",
            "Categories",
        ],
        headings=["Alerts", "Severity levels"],
        header=["Alert", "Metric", "Threshold", "Severity", "Runbook"],
        rows=80,
        lists=[],
    ),
}


def _rows_under(text: str, header: list[str]) -> int:
    """Rows of the Markdown tables whose header row holds `header` (summed over the tables)."""
    lines, found = text.splitlines(), 0
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.strip().startswith("|") and all(h in cells for h in header):
            for below in lines[i + 1:]:
                if not below.strip().startswith("|"):
                    break
                found += not re.fullmatch(r"\|?[\s:\-|]+\|?", below.strip())
    return found


def score_html(name: str, out: str) -> dict[str, Any]:
    e = HTML_EXPECT[name]
    flat = re.sub(r"[\\*_`]", "", out)
    heads = sum(bool(re.search(r"^#{1,6}\s+" + re.escape(h) + r"\s*$", flat, re.M)) for h in e["headings"])
    items = sum(bool(re.search(r"^\s*(?:[-*+]|\d+\.)\s+" + re.escape(s), flat, re.M)) for s in e["lists"])
    return {"kept": sum(s in flat for s in e["main"]) / len(e["main"]),
            "noise": f"{sum(s in flat for s in e['noise'])}/{len(e['noise'])}",
            "headings": f"{heads}/{len(e['headings'])}",
            "table": f"{_rows_under(flat, e['header'])}/{e['rows']}" if e["header"] else "–",
            "lists": f"{items}/{len(e['lists'])}" if e["lists"] else "–"}


def _ours(html: str) -> str:
    from rag_core.loaders import load_bytes

    return load_bytes(html.encode(), "page.html").text


def _trafilatura(html: str) -> str:
    import trafilatura

    return trafilatura.extract(html, output_format="markdown", include_tables=True, include_formatting=True,
                               include_links=False, favor_recall=True) or ""


def _readability_markdownify(html: str) -> str:
    from markdownify import markdownify
    from readability import Document

    return markdownify(Document(html).summary(), heading_style="ATX")


def _html2text(html: str) -> str:
    import html2text

    h = html2text.HTML2Text()
    h.body_width, h.ignore_links, h.ignore_images = 0, True, True
    return h.handle(html)


def _markdownify(html: str) -> str:
    from markdownify import markdownify

    return markdownify(html, heading_style="ATX", strip=["script", "style"])


def _inscriptis(html: str) -> str:
    from inscriptis import get_text

    return get_text(html)


def _resiliparse(html: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    return extract_plain_text(HTMLTree.parse(html), main_content=True, list_bullets=True, links=False)


HTML_CANDIDATES: dict[str, Callable[[str], str]] = {
    "ours (lxml + rag_core/loaders/html.py)": _ours, "trafilatura (markdown, favor_recall)": _trafilatura,
    "readability-lxml + markdownify": _readability_markdownify, "html2text (whole page)": _html2text,
    "markdownify (whole page)": _markdownify, "inscriptis": _inscriptis, "resiliparse (main_content)": _resiliparse,
}


def measure_html() -> list[dict[str, Any]]:
    pages = {name: (FIXTURES / f"{name}.html").read_text(encoding="utf-8") for name in HTML_EXPECT}
    rows = []
    for candidate, extract in HTML_CANDIDATES.items():
        try:
            extract("<p>x</p>")
        except ImportError:
            log(f"formats: {candidate} is not installed; left out")
            continue
        for name, html in pages.items():
            seconds, out = best_of(lambda: extract(html), 5)
            rows.append({"extractor": candidate, "page": name, "ms": seconds * 1000, **score_html(name, out)})
    return rows


def measure_pdf_readers() -> list[dict[str, Any]]:
    import pdfplumber
    import pypdfium2
    from pypdf import PdfReader

    data = report_pdf(24)

    def pypdf_pages() -> list[str]:
        return [p.extract_text() for p in PdfReader(io.BytesIO(data)).pages]

    def plumber_pages() -> list[str]:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            return [p.extract_text() for p in pdf.pages]

    def pdfium_pages() -> list[str]:
        pdf = pypdfium2.PdfDocument(data)
        try:
            return [pdf[i].get_textpage().get_text_range() for i in range(len(pdf))]
        finally:
            pdf.close()

    truth = "".join(ZH.split()) * 2
    rows = []
    for reader, read in (("pypdf (text)", pypdf_pages), ("pdfplumber (text and tables)", plumber_pages),
                         ("pypdfium2 (text, rendering)", pdfium_pages)):
        seconds, pages = best_of(read, 2)
        flat = "".join("".join(pages).split())
        rows.append({"reader": reader, "pages": len(pages), "pages_s": len(pages) / seconds,
                     "zh_paragraphs": flat.count(truth), "zh_expected": 24 * 3})
    return rows


# --- the record ------------------------------------------------------------------------------------

# --- 4. Documents as they are (issue 39): each weak spot, before and after, in this run -----------------------------

def measure_documents(quick: bool) -> dict[str, Any]:
    """The figures of bench/docs_*.py: each compares the loaders with the reading they replaced (kept in its file) and
    with the libraries they use, on documents made on the spot that show the weak spot."""
    from bench import docs_faq, docs_ocr, docs_pdf, docs_running, docs_word

    return {"pdf": docs_pdf.measure(1 if quick else 3), "running": docs_running.measure_running(quick),
            "word": docs_word.measure_word(quick), "faq": docs_faq.measure_faq(quick), "ocr": docs_ocr.measure(quick)}


def render_documents(figures: dict[str, Any], record: dict[str, Any]) -> str:
    from bench import docs_pdf, docs_running, docs_word

    faq = figures["faq"]
    sheets = table(["header variant", "format", "rows", "read as Q&A before", "after", "recall@1 before", "after"],
                   [[r["variant"], r["format"], r["rows"], r["qa_rows_before"], r["qa_rows_after"],
                     r["recall_at_1_before"], r["recall_at_1_after"]] for r in faq["files"]], 2)
    sheets += (f"\n\nSheets read as Q&A: {faq['sheets_recognised_before']}/{faq['sheets']} before, "
               f"{faq['sheets_recognised_after']}/{faq['sheets']} after; recall@1 (the first hit is the question's own "
               f"row): {faq['recall_at_1_before']:.2f} before, {faq['recall_at_1_after']:.2f} after.")
    parts = [("PDF: a two-column paper and a slide deck, read four ways (bench/docs_pdf.py)",
              docs_pdf.render(figures["pdf"])),
             ("Running headers and footers left in chunks, without and with the step (bench/docs_running.py)",
              docs_running.render_running(figures["running"])),
             ("Word: outline-level headings, list numbers, a cover page, a long table (bench/docs_word.py)",
              docs_word.render_word(figures["word"])),
             ("FAQ sheets under other column names (bench/docs_faq.py)", sheets),
             ("OCR of pages in columns: the old line-by-line join and the column reading (bench/docs_ocr.py)",
              table(["page", "way", "CER", "sentences whole", "in order", "pages/s"],
                    [[c["case"] if way == "before" else "", way, c[way]["cer"], c[way]["whole"], c[way]["in_order"],
                      c[way]["pages_s"]] for c in figures["ocr"]["cases"] for way in ("before", "after")], 3))]
    return "".join("\n" + section(title, body, record) for title, body in parts)


def measure(quick: bool = False) -> dict[str, Any]:
    published = load("ingest")
    markdown = None
    if published is not None:
        markdown = published["corpora"]["English (SciFact)"]["ingestor_chunks_s"]
    return {"ocr": measure_ocr(quick), "ingest": measure_ingest(quick), "published_markdown_chunks_s": markdown,
            "html": measure_html(), "pdf_readers": measure_pdf_readers(), "documents": measure_documents(quick)}


def render(record: dict[str, Any]) -> str:
    ocr = table(["page", "pages", "characters", "CER", "pages/s"],
                [[r["case"], r["pages"], r["chars"], r["cer"], r["pages_s"]] for r in record["ocr"]], 3)
    ocr += ("\n\nrapidocr-onnxruntime 1.4 (PP-OCRv4 zh/en, the `ocr` extra) through `load_bytes`; pages drawn by "
            "PIL in Noto Sans CJK from known text, half English, half Chinese; CER = edit distance / characters, "
            "whitespace ignored.")
    text = section("OCR: character error rate and speed", ocr, record)
    rows = [[r["format"], r["files"], r["mb"], r["chunks"], r["chunks_s"], r["read_share"], r["read_mb_s"]]
            for r in record["ingest"]]
    ingest = table(["format", "files", "MB", "chunks", "end to end chunks/s", "reading share", "reading MB/s"], rows, 2)
    md = record.get("published_markdown_chunks_s")
    ingest += ("\n\nEnd to end through `Ingestor` (local USE embedder, chunks 800/100, Milvus Lite); the same report "
               "text in every format but the sheets (alert rows, one record each). "
               + (f"Published Markdown figure (bench/results/ingest.json, SciFact): {md:.0f} chunks/s." if md else ""))
    text += "\n" + section("Ingest throughput per format", ingest, record)
    html = table(
        ["extractor", "page", "ms", "kept", "boilerplate left", "headings", "table rows under header", "lists"],
        [
            [r["extractor"], r["page"], r["ms"], r["kept"], r["noise"], r["headings"], r["table"], r["lists"]]
            for r in record["html"]
        ],
        2,
    )
    text += "\n" + section("HTML main-content extractors on three pages (tests/loaders/fixtures)", html, record)
    pdf = table(["reader", "pages", "pages/s", "Chinese paragraphs found"],
                [[r["reader"], r["pages"], r["pages_s"], f"{r['zh_paragraphs']}/{r['zh_expected']}"]
                 for r in record["pdf_readers"]], 1)
    text += "\n" + section("PDF text extraction", pdf, record)
    if "documents" in record:
        text += render_documents(record["documents"], record)
    return text


def run(quick: bool = False) -> str:
    return record_and_print("formats", quick, measure(quick), render)


if __name__ == "__main__":
    main(run, __doc__)
