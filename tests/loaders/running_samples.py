"""Documents with running headers and footers, made on the spot (reportlab, python-pptx) for tests/loaders/
test_running.py and bench/docs_running.py: a manual-like PDF in Chinese (its title at the top of every page, a page
number at the bottom in one of several styles, a title page that is only the title, a chapter heading on two
pages), a policy-like PDF in English ("Untitled N" at the top, "Page N of M" and "Company Confidential" drawn after
the body), the same PDFs without the running lines, and a deck with a conference's name on every slide. Each body
line is different from every other (two rotating pools), and each page has a sentence of its own to cite."""

from __future__ import annotations

import io
from collections.abc import Callable

MANUAL_TITLE = "Java 开发手册（黄山版）"
CHAPTER = "一、编程规约"  # a real heading, at the top of the body on two pages only
FOOTERS: dict[str, Callable[[int, int], str]] = {
    "bare": lambda p, n: f"{p}",
    "dashes": lambda p, n: f"- {p} -",
    "page of": lambda p, n: f"Page {p} of {n}",
    "chinese": lambda p, n: f"第 {p} 页",
    "slash": lambda p, n: f"{p} / {n}",
}
_ZH_A = ("方法参数在使用前必须校验", "集合初始化时指定初始值大小", "禁止在循环中拼接字符串", "日志输出使用占位符",
         "线程资源必须通过线程池提供", "金额计算使用定点小数", "外部接口调用设置超时时间", "异常不要用来做流程控制",
         "数据库字段必须带有注释", "单元测试必须可以重复执行", "配置项需要写明默认取值")
_ZH_B = ("，否则会在高并发时出错。", "，这是代码评审的检查项。", "，违反时提交会被拒绝。", "，详见附录中的说明。",
         "，新代码必须遵守。", "，旧代码在修改时补齐。", "，工具会自动检查。")
_EN_A = ("Employees must report security incidents", "Access to customer data is logged",
         "Passwords are rotated by the identity team", "Laptops are encrypted before first use",
         "Visitors sign in at the front desk", "Production changes need a second reviewer",
         "Backups are tested every quarter", "Vendors sign the data processing agreement",
         "Remote access uses the company VPN", "Old records are deleted after seven years",
         "Exceptions are approved by the security officer")
_EN_B = (" within one business day.", " and reviewed by the auditors.", " as the handbook describes.",
         " unless the policy owner agrees.", " for every team without exception.", " and recorded in the register.",
         " according to the retention schedule.")


def zh_marker(page: int) -> str:
    """The sentence only page `page` of the manual has."""
    return f"本页要点编号{chr(0x4E00 + page * 7)}{chr(0x4E00 + page * 13)}：只在这一页出现。"


def en_marker(page: int) -> str:
    return f"Clause {page} of this policy is stated on this page alone."


def _font() -> str:
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    return "STSong-Light"


def _pdf(pages: list[tuple[list[str], list[str], list[str]]], font: str, draw_running_first: bool = True) -> bytes:
    """A PDF of pages given as (lines at the top, body lines, lines at the bottom), in `font`. The running lines are
    drawn before the body (as reportlab's onPage and many PDF makers do) or after it."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4, invariant=1)
    width, height = A4

    def running(top: list[str], bottom: list[str]) -> None:
        c.setFont(font, 9)
        for i, line in enumerate(top):
            c.drawCentredString(width / 2, height - 36 - i * 12, line)
        for i, line in enumerate(bottom):
            c.drawCentredString(width / 2, 30 + (len(bottom) - 1 - i) * 12, line)

    for top, body, bottom in pages:
        if draw_running_first:
            running(top, bottom)
        c.setFont(font, 11)
        for i, line in enumerate(body):
            c.drawString(72, height - 90 - i * 18, line)
        if not draw_running_first:
            running(top, bottom)
        c.showPage()
    c.save()
    return buf.getvalue()


def _body(page: int, lines: int, a: tuple[str, ...], b: tuple[str, ...]) -> list[str]:
    return [a[(page * 3 + i) % len(a)] + b[(page + i) % len(b)] for i in range(lines)]


def manual_pdf(pages: int = 12, footer: str = "dashes", running: bool = True, lines: int = 24) -> bytes:
    """The Chinese manual: page 1 is only its title; pages 2.. have the title at the top, a page number at the bottom
    (`FOOTERS[footer]`), the chapter heading on pages 2 and 5, body lines and `zh_marker(page)`."""
    content: list[tuple[list[str], list[str], list[str]]] = [([], [MANUAL_TITLE], [])]
    for p in range(2, pages + 1):
        body = ([CHAPTER] if p in (2, 5) else []) + _body(p, lines, _ZH_A, _ZH_B)
        body.insert(len(body) // 2, zh_marker(p))
        content.append(([MANUAL_TITLE], body, [FOOTERS[footer](p, pages)]) if running else ([], body, []))
    return _pdf(content, _font())


def policy_pdf(pages: int = 10, running: bool = True, lines: int = 30) -> bytes:
    """The English policy: "Untitled N" at the top, body lines with `en_marker(page)`, then "Company Confidential"
    and "Page N of M" at the bottom, drawn after the body."""
    content = []
    for p in range(1, pages + 1):
        body = _body(p, lines, _EN_A, _EN_B)
        body.insert(len(body) // 2, en_marker(p))
        content.append(([f"Untitled {p}"], body, ["Company Confidential", f"Page {p} of {pages}"]) if running
                       else ([], body, []))
    return _pdf(content, "Helvetica", draw_running_first=False)


def running_lines(kind: str, pages: int) -> set[str]:
    """Every running line drawn in `manual_pdf(pages, footer=kind)` (kind a FOOTERS key) or in `policy_pdf(pages)`
    (kind "policy"), as the lines a chunk must not hold."""
    if kind == "policy":
        return {f"Untitled {p}" for p in range(1, pages + 1)} | {"Company Confidential"} | {
            f"Page {p} of {pages}" for p in range(1, pages + 1)}
    return {MANUAL_TITLE} | {FOOTERS[kind](p, pages) for p in range(2, pages + 1)}


CONFERENCE = "KubeCon China 2025 · Shanghai"


def conference_deck(slides: int = 5) -> bytes:
    """A deck whose slides each have a title, two bullets and the conference's name in a text box at the bottom."""
    from pptx import Presentation
    from pptx.util import Inches

    prs = Presentation()
    for n in range(1, slides + 1):
        slide = prs.slides.add_slide(prs.slide_layouts[1])
        slide.shapes.title.text = f"Topic {n}: {_EN_A[n % len(_EN_A)]}"
        body = slide.placeholders[1].text_frame
        body.text = _EN_A[(n + 3) % len(_EN_A)] + _EN_B[n % len(_EN_B)]
        body.add_paragraph().text = _EN_A[(n + 5) % len(_EN_A)] + _EN_B[(n + 2) % len(_EN_B)]
        box = slide.shapes.add_textbox(Inches(0.5), Inches(7), Inches(6), Inches(0.4))
        box.text_frame.text = CONFERENCE
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()
