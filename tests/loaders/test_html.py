"""HTML pages: the main content as Markdown (headings, tables with their header row, lists, link text), the
page's navigation, headers, footers and scripts dropped; refusals of junk."""

from __future__ import annotations

import pytest

from rag_core.errors import LoaderError
from rag_core.loaders import load_bytes
from tests.loaders.checks import chunks_of
from tests.loaders.samples import FIXTURES

CONFLUENCE = """# 支付服务故障处理手册 Payment service runbook

本手册说明支付服务 `pay-gateway` 出现 5xx 错误率升高时的排查与恢复步骤。This runbook covers the payment gateway when \
its error rate rises.

## Symptoms 症状

- 告警 PayGatewayHighErrorRate 触发，5 分钟内 5xx 比例超过 2%。
- Checkout requests time out after 30 seconds.
- 商户反馈支付回调延迟。

## Diagnosis 诊断

1. 打开 Grafana payment dashboard，确认错误集中在哪个可用区。
2. Check the connection pool of the database: `SHOW PROCESSLIST` should list fewer than 200 connections.
3. 查看最近一次发布记录，确认是否与 Release calendar 中的变更时间吻合。

不要在高峰期（20:00-22:00）直接重启全部实例，先摘除一半流量。Never restart all instances at peak time.

## Recovery 恢复

### Rollback 回滚

如果错误与发布有关，执行回滚：

```
kubectl rollout undo deployment/pay-gateway -n payments
kubectl rollout status deployment/pay-gateway -n payments
```

### Thresholds 阈值

| Metric 指标 | Warning | Critical |
|---|---|---|
| 5xx ratio | 1% | 2% |
| p99 latency 延迟 | 800 ms | 2 s |
| DB connections | 150 | 200 |

恢复后在工单中记录根因，并通知 值班经理。"""


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def test_confluence_export_main_content_as_markdown() -> None:
    doc = load_bytes(fixture("confluence_runbook.html"), "ops/pay.html")
    assert doc.text == CONFLUENCE  # breadcrumbs, page metadata, TOC macro, attachments and footer are gone
    assert (doc.extension, doc.encoding, doc.places) == ("html", "utf-8", ())
    chunks = chunks_of(doc, 300, 40)
    paths = {c.heading_path for c in chunks}
    assert ("支付服务故障处理手册 Payment service runbook", "Recovery 恢复", "Thresholds 阈值") in paths
    table = next(c for c in chunks if "DB connections" in c.text)
    assert "| Metric 指标 | Warning | Critical |" in table.text  # the header row is in the chunk with the rows


def test_documentation_page_drops_navigation_and_keeps_lists_and_code() -> None:
    doc = load_bytes(fixture("docs_page.html"), "docs/scaling.html")
    for gone in ("Skip to content", "Edit this page", "Copyright", "Deploying to Kubernetes", "gtag", "¶",
                 "Table of contents", "Installation"):
        assert gone not in doc.text, gone
    assert doc.text.startswith("# Scaling workers\n\nEach worker process pulls jobs from one queue.")
    assert "- the oldest job waits longer than 120 seconds;\n   - for the payments queue, longer than 30 seconds." \
        in doc.text
    assert "1. Apply the chart with `helm upgrade queue ./chart -f values.yaml`.\n2. Watch the replicas" in doc.text
    assert "```\nautoscaling:\n  enabled: true\n  minReplicas: 2\n  maxReplicas: 32\n```" in doc.text
    assert "plan capacity with the metrics reference at hand" in doc.text  # link text kept, the link dropped
    assert [c.heading_path for c in chunks_of(doc, 400, 50)][-1] == ("Scaling workers", "Limits")


def test_wiki_page_with_a_big_table_keeps_the_header_with_every_block() -> None:
    doc = load_bytes(fixture("wiki_alert_table.html"), "wiki/alerts.html")
    assert doc.text.startswith("# Alert catalogue\n\nThis page lists every production alert")
    for gone in ("Jump to navigation", "[edit]", "edit", "Retrieved from", "Navigation menu", "Privacy policy",
                 "read-only on Saturday", "Contents"):
        assert gone not in doc.text, gone
    header = "| Alert | Metric | Threshold | Severity | Runbook |\n|---|---|---|---|---|"
    rows = [line for line in doc.text.splitlines() if line.startswith("| ") and "Runbook:" in line]
    assert (
        len(rows) == 80 and rows[0] == "| api-gatewayHighCPUUsage | CPU usage | 85% | warning | Runbook:api-gateway |"
    )
    assert doc.text.count(header) > 1  # the table is cut into blocks, each starting with the header row
    for chunk in chunks_of(doc, 800, 100):
        if "Runbook:" in chunk.text:
            assert header in chunk.text, chunk.text
    assert doc.text.endswith("warning: Handled in working hours; a ticket is opened automatically.\n\n"
                             "critical: Pages the on-call engineer at any hour; acknowledge within 15 minutes.")


def test_declared_charset_and_legacy_encodings() -> None:
    page = (
        "<html><head><meta charset='gbk'><title>手册</title></head><body><p>中文运维手册：重启服务。</p></body></html>"
    )
    doc = load_bytes(page.encode("gbk"), "gbk.htm")
    assert doc.text == "# 手册\n\n中文运维手册：重启服务。" and doc.encoding == "gb18030"
    undeclared = load_bytes("<p>中文运维手册：磁盘空间不足时的处理步骤，先清理日志。</p>".encode("gbk"), "x.html")
    assert undeclared.text == "中文运维手册：磁盘空间不足时的处理步骤，先清理日志。"


def test_inline_markup_and_an_articles_own_header() -> None:
    doc = load_bytes(b"<h1>T</h1><p>Paragraph <b>bold</b> and <a href='x'>a link</a> end.</p><p>tail</p>", "e.html")
    assert doc.text == "# T\n\nParagraph bold and a link end.\n\ntail"
    blog = (b"<body><header><a href='/'>Blog</a></header><div class='layout with-nav'><article><header><h1>Post</h1>"
            b"<p class='meta'>March 2025</p></header><p>The body of the post.</p></article></div></body>")
    assert load_bytes(blog, "b.html").text == "# Post\n\nMarch 2025\n\nThe body of the post."


@pytest.mark.parametrize(("html", "fragment"), [
    (b"<html><head><script>" + b"var x = 1;" * 200_000 + b"</script></head><body><div id='root'></div>"
     b"<noscript>You need to enable JavaScript to run this app.</noscript></body></html>", "% script"),
    (b"<html><body><nav><a href='/'>Home</a></nav><footer>(c) 2025</footer></body></html>", "no text"),
    (b"<div>" * 3000 + b"deep" + b"</div>" * 3000, "nests elements more than 2,000 deep"),
])
def test_junk_pages_are_refused_in_one_line(html: bytes, fragment: str) -> None:
    with pytest.raises(LoaderError) as info:
        load_bytes(html, "junk.html")
    message = str(info.value)
    assert fragment in message and "\n" not in message and message.startswith("junk.html: ")
