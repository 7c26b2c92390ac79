"""FAQ sheets as people name their columns (issue 39): the same kind of question-and-answer pairs under English,
Chinese, language-suffixed and bilingual headers, as .xlsx (openpyxl) and .csv; and a sheet that only has a title
column and prose, which is no FAQ. Used by tests/loaders/test_faq_sheets.py and bench/docs_faq.py."""

from __future__ import annotations

import csv
import io

# (question in English, in Chinese, answer in English, in Chinese): one topic each, so a question has one answer
PAIRS = [
    ("How do I rotate the API keys?", "如何轮换 API 密钥？",
     "Open the vault console and revoke the old key.", "打开保险库控制台并吊销旧密钥。"),
    ("Where are the nightly backups kept?", "每晚的备份存放在哪里？",
     "In the glacier bucket, for thirty days.", "存放在冰川存储桶中，保留三十天。"),
    ("Why is the export job slow?", "导出任务为什么很慢？",
     "It walks every partition before it writes.", "它在写入之前会遍历每一个分区。"),
    ("How can I reset my password?", "如何重置我的密码？",
     "Use the forgot-password link on the sign-in page.", "在登录页面点击忘记密码链接。"),
    ("Who approves production deployments?", "谁审批生产环境的部署？",
     "The on-call release manager approves them.", "由值班的发布经理审批。"),
    ("What is the disk usage alert threshold?", "磁盘使用率告警的阈值是多少？",
     "Ninety percent for ten minutes.", "持续十分钟超过百分之九十。"),
    ("How do I request access to the data warehouse?", "如何申请数据仓库的访问权限？",
     "File a ticket in the access portal.", "在权限门户提交一张工单。"),
    ("Which regions host the payment service?", "支付服务部署在哪些区域？",
     "Frankfurt and Singapore.", "法兰克福和新加坡。"),
    ("How long are application logs retained?", "应用日志保留多长时间？",
     "Fourteen days in Loki.", "在 Loki 中保留十四天。"),
    ("What should I do when the message queue backs up?", "消息队列积压时应该怎么办？",
     "Scale out the consumers and look for poison messages.", "扩容消费者并检查有毒消息。"),
    ("How do I restart a stuck pod?", "如何重启卡住的 Pod？",
     "Delete it and let its deployment create a new one.", "删除它，让 Deployment 重新创建一个。"),
    ("Where is the on-call schedule?", "值班表在哪里？",
     "In the incident tool, under Schedules.", "在事故管理工具的排班页面。"),
]

# A variant: its headers, each with the field of a pair it holds ("category": a column that is neither).
VARIANTS: dict[str, list[tuple[str, str]]] = {
    "english": [("Question", "q_en"), ("Answer", "a_en"), ("Category", "category")],
    "desc": [("desc", "q_en"), ("answer", "a_en")],
    "suffixed": [("Q_EN", "q_en"), ("A_EN", "a_en")],
    "spaced": [("Query (EN)", "q_en"), (" Response ", "a_en")],
    "chinese": [("问题", "q_zh"), ("答案", "a_zh"), ("分类", "category")],
    "chinese_standard": [("标准问题", "q_zh"), ("答复", "a_zh")],
    "bilingual": [("q_en", "q_en"), ("q_zh", "q_zh"), ("a_en", "a_en"), ("a_zh", "a_zh")],
}
ANSWER_OF = {"english": "a_en", "desc": "a_en", "suffixed": "a_en", "spaced": "a_en", "chinese": "a_zh",
             "chinese_standard": "a_zh", "bilingual": "a_en"}
QUESTIONS_OF = {name: [field for _, field in columns if field.startswith("q_")] for name, columns in VARIANTS.items()}


def field(pair: tuple[str, str, str, str], name: str) -> str:
    return {"q_en": pair[0], "q_zh": pair[1], "a_en": pair[2], "a_zh": pair[3], "category": "operations"}[name]


def rows(variant: str, pairs: list[tuple[str, str, str, str]]) -> list[list[str]]:
    columns = VARIANTS[variant]
    return [[header for header, _ in columns], *([field(p, f) for _, f in columns] for p in pairs)]


def faq_xlsx(variant: str, pairs: list[tuple[str, str, str, str]], sheet: str = "FAQ") -> bytes:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = sheet
    for row in rows(variant, pairs):
        ws.append(row)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def faq_csv(variant: str, pairs: list[tuple[str, str, str, str]]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf).writerows(rows(variant, pairs))
    return buf.getvalue().encode("utf-8")


TITLED_PROSE = [["Title", "Body"],
                ["Disk full on the database host", "The data volume filled up overnight; we moved old WAL files off "
                 "and added an alert at ninety percent."],
                ["Certificate expired", "The ingress certificate was not renewed because the renewal job lacked "
                 "permission; the job now runs with its own service account."]]


def titled_prose_xlsx() -> bytes:
    """A sheet of incident titles and prose: a title column, no answer column, so no FAQ."""
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Incidents"
    for row in TITLED_PROSE:
        ws.append(row)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()
