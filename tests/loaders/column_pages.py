"""Two-column pages rendered from known sentences, as a scanned paper shows them (for tests/loaders/test_ocr_columns.py
and bench/docs_ocr.py): each column's sentences wrapped to its width, a title across both columns above them when
asked. Deterministic; the font is the CJK one the other OCR tests render with (tests/loaders/samples.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tests.loaders.samples import CJK_FONT

LEFT = (
    "The payment gateway keeps a pool of workers for each zone.",
    "When the error rate passes two percent, drain one zone first.",
    "Restart the workers of that zone one at a time.",
    "Watch the queue depth fall before you move to the next zone.",
)
RIGHT = (
    "Database connections are shared by all workers of a zone.",
    "Check the pool size before you restart anything at all.",
    "A full pool makes every request wait for a free connection.",
    "Raise the pool size only after the slow queries are fixed.",
)
TITLE = "Runbook for the payment gateway in two columns"
LEFT_ZH = ("支付网关为每个可用区保留一组工作进程。", "错误率超过百分之二时，先摘除一个可用区。",
           "逐个重启该可用区的工作进程。")
RIGHT_ZH = ("数据库连接由同一可用区的工作进程共享。", "重启之前先检查连接池的大小。",
            "连接池满时每个请求都要等待空闲连接。")


def wrap(sentences: Sequence[str], font: Any, width: int) -> list[str]:
    """The sentences as one paragraph, broken into lines no wider than `width` pixels (at spaces; anywhere in
    Chinese)."""
    spaced = any(" " in s for s in sentences)
    joint = " " if spaced else ""
    lines: list[str] = []
    line = ""
    for word in (" ".join(sentences).split() if spaced else "".join(sentences)):
        candidate = f"{line}{joint}{word}" if line else word
        if line and font.getlength(candidate) > width:
            lines.append(line)
            line = word
        else:
            line = candidate
    if line:
        lines.append(line)
    return lines


def render_columns(columns: Sequence[Sequence[str]] = (LEFT, RIGHT), title: str | None = None,
                   size: tuple[int, int] = (1240, 1754), font_px: int = 28, gutter: int = 80,
                   margin: int = 90, lead: float = 1.6) -> Any:
    """A white page with `columns` side by side (each a list of sentences, wrapped to the column's width), lines of
    every column at the same heights (as a typeset page has them), and `title` across the page above them."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(str(CJK_FONT), font_px)
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    y = margin
    if title:
        big = ImageFont.truetype(str(CJK_FONT), int(font_px * 1.4))
        draw.text((margin, y), title, font=big, fill="black")
        y += int(font_px * 1.4 * 2.2)
    width = (size[0] - 2 * margin - gutter * (len(columns) - 1)) // len(columns)
    for n, sentences in enumerate(columns):
        x = margin + n * (width + gutter)
        for row, line in enumerate(wrap(sentences, font, width)):
            draw.text((x, y + int(row * font_px * lead)), line, font=font, fill="black")
    return image
