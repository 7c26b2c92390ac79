"""Spreadsheets and CSV: one record per row repeating its headers, rows chunked whole, the sheet in the heading
path, cached formula values, Q&A sheets, encodings."""

from __future__ import annotations

import pytest

from rag_core.errors import ConfigError, LoaderError
from rag_core.loaders import LoadOptions, load_bytes
from rag_core.loaders.options import parse_qa_columns
from rag_core.records import ROW
from tests.loaders.checks import chunks_of
from tests.loaders.samples import GBK_CSV, workbook

WORKBOOK_TEXT = """# Alerts

Production alerts (reviewed 2025-03)

Alert: HighCPUUsage · Threshold: 85% · Runbook: runbooks/cpu_high.md · Score: 85

Alert: DiskAlmostFull · Threshold: 90% · Runbook: runbooks/disk_full.md · Score: 90

Alert: PaymentErrors · Threshold: 2% · Runbook: runbooks/payments.md · Score: 2

# FAQ

## Q: 如何重启支付服务？
A: 执行 systemctl restart pay-gateway，然后观察五分钟错误率。
分类: 支付

## Q: How do I rotate the API keys?
A: Create the new key, deploy it, then revoke the old one after one day.
分类: security"""


def test_workbook_rows_become_records_and_the_faq_sheet_qa() -> None:
    doc = load_bytes(workbook(), "ops/alerts.xlsx")
    assert doc.text == WORKBOOK_TEXT  # percent formats as shown, the formula's cached value, the title row alone
    assert (doc.extension, doc.encoding) == ("xlsx", "xlsx")
    assert [(p.sheet, p.number, doc.text[p.offset:p.offset + 12]) for p in doc.places] == [
        ("Alerts", 1, "# Alerts\n\nPr"), ("Alerts", 1, "Production a"), ("Alerts", 3, "Alert: HighC"),
        ("Alerts", 4, "Alert: DiskA"), ("Alerts", 5, "Alert: Payme"), ("FAQ", 1, "# FAQ\n\n## Q:"),
        ("FAQ", 2, "## Q: 如何重启支付"), ("FAQ", 3, "## Q: How do"),
    ]
    assert {p.unit for p in doc.places} == {ROW}


def test_rows_are_never_split_and_chunks_never_overlap() -> None:
    doc = load_bytes(workbook(), "ops/alerts.xlsx")
    starts = {p.offset for p in doc.places}
    row_ends = {p.offset + len(doc.text[p.offset:].split("\n\n", 1)[0]) for p in doc.places}
    for size in (130, 200, 400, 800):  # every row fits in 130
        chunks = chunks_of(doc, size, 50)
        for c in chunks:
            assert c.start in starts and c.end in row_ends, (size, c)  # a chunk starts and ends at a row
            assert c.overlap_chars == 0 and c.boundary in ("first", "section", "no-overlap: rows are kept whole")
    small = chunks_of(doc, 130, 50)
    assert [(c.heading_path, c.location.label) for c in small] == [
        (("Alerts",), "sheet Alerts, rows 1–3"), (("Alerts",), "sheet Alerts, row 4"),
        (("Alerts",), "sheet Alerts, row 5"),
        (("FAQ", "Q: 如何重启支付服务？"), "sheet FAQ, rows 1–2"),
        (("FAQ", "Q: How do I rotate the API keys?"), "sheet FAQ, row 3"),
    ]
    # A Q&A pair is one chunk: the question leads its text and is its title, the answer is returned with it.
    assert small[-1].text.startswith("## Q: How do I rotate the API keys?\nA: Create the new key")
    assert small[-1].title == "Q: How do I rotate the API keys?"


def test_gbk_csv() -> None:
    doc = load_bytes(GBK_CSV.encode("gbk"), "告警.csv")
    assert doc.encoding == "gb18030"
    assert doc.text == ("告警名称: CPU使用率过高 · 阈值: 85% · 处理手册: runbooks/cpu.md\n\n"
                        "告警名称: 磁盘空间不足 · 阈值: 90% · 处理手册: runbooks/disk.md")
    assert [(p.number, p.sheet) for p in doc.places] == [(2, ""), (3, "")]
    assert [c.location.label for c in chunks_of(doc, 60, 10)] == ["row 2", "row 3"]


def test_csv_delimiters_quotes_and_tsv() -> None:
    semicolons = "Name;Owner;Notes\npay;Li Wei;\"restart; then watch\nfive minutes\"\n"
    assert (
        load_bytes(semicolons.encode(), "a.csv").text
        == "Name: pay · Owner: Li Wei · Notes: restart; then watch five minutes"
    )
    tsv = "Service\tPort\napi\t8080\n# of hosts\t3\n"
    doc = load_bytes(tsv.encode(), "ports.tsv")
    # "# of hosts: 3" would read as a heading: records are escaped so they stay paragraphs
    assert doc.text == "Service: api · Port: 8080\n\nService: # of hosts · Port: 3"
    assert load_bytes(b"\xef\xbb\xbfQuestion,Answer\nWhy?,Because.\n", "faq.csv").text == "# Q: Why?\nA: Because."


def test_qa_columns_by_setting() -> None:
    data = b"Symptom,Fix,Owner\nDisk full,Rotate the logs,ops\n"
    assert load_bytes(data, "kb.csv").text == "Symptom: Disk full · Fix: Rotate the logs · Owner: ops"
    doc = load_bytes(data, "kb.csv", options=LoadOptions(qa_columns=parse_qa_columns("Symptom, Fix")))
    assert doc.text == "# Q: Disk full\nA: Rotate the logs\nOwner: ops"
    with pytest.raises(ConfigError, match="two different columns"):
        parse_qa_columns("Symptom")


def test_a_header_alone_and_sheets_without_values() -> None:
    assert load_bytes(b"Alert,Threshold\n", "h.csv").text == "Alert · Threshold"
    with pytest.raises(LoaderError, match="no values"):
        load_bytes(b",,\n,,\n", "blank.csv")
