"""OCR: text from images (.png, .jpg) and from PDF pages without a text layer, with rapidocr-onnxruntime.

rapidocr-onnxruntime 1.4 carries PP-OCRv4's Chinese/English detection, direction and recognition models
inside its wheel (Apache-2.0), so nothing is downloaded at run time. It is the optional extra `ocr`
(`pip install ".[ocr]"`, which `make run` and `make test` install); without it an image or a scanned PDF is
refused in one line naming the extra (code "needs_ocr").

Bounded: an image larger than `loader.ocr-max-pixels` is refused before it is decoded (a PNG of a few KB
can claim 100,000 x 100,000 pixels); images are shrunk to `WORK_PIXELS` before OCR (detection costs grow with
pixels, recognition does not need more); a PDF needing OCR on more than `loader.ocr-max-pages` pages is
refused before any is read; the deadline (`loader.max-seconds`) is checked before every page.

The boxes the model finds are put back in reading order (`layout`): column by column when the page has columns of
text (gutters no line crosses, `gutters`; a title across the columns cuts them into sections), each column in lines
by vertical overlap, words left to right (a space between them unless both sides are Chinese, Japanese or Korean), a
blank line where the gap between lines is more than one and a half lines (a new paragraph). Lines are read upright
first, rapidocr's direction classifier only for the boxes that read badly so (`recognise`).
"""

from __future__ import annotations

import importlib.util
import io
import math
import re
import struct
import threading
from statistics import median
from typing import Any

from ..errors import LoaderError
from ..phrases import Phrase
from ..records import IMAGE, Place
from .extracted import Extracted, Format, clean_extracted, reason
from .limits import TextBudget
from .options import LoadOptions

OCR_EXTRA = 'pip install ".[ocr]"'
WORK_PIXELS = 8_000_000  # an A4 page at 300 dpi; OCR of a larger image is slower and no better
_PNG = b"\x89PNG\r\n\x1a\n"
_JPEG = b"\xff\xd8\xff"
_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\u3000-\u303f]")

_engine: Any = None
_engine_lock = threading.Lock()  # one engine per process, one page at a time (it uses every core already)


def ocr_available() -> bool:
    try:
        return importlib.util.find_spec("rapidocr_onnxruntime") is not None
    except (ImportError, ValueError):  # ValueError: sys.modules holds None for it (imports of it are blocked)
        return False


def needs_ocr(name: str, what: str) -> LoaderError:
    return LoaderError(f"{name}: {what}; reading it needs OCR, an optional extra: {OCR_EXTRA} (rapidocr-onnxruntime)",
                       code="needs_ocr")


def image_text(data: bytes, name: str, _ext: str, budget: TextBudget, options: LoadOptions) -> Extracted:
    """The text of a PNG or JPEG image, one `image` place (read by OCR), and a note saying it was read by OCR."""
    if not data.startswith((_PNG, _JPEG)):
        kind = "JPEG" if name.lower().endswith((".jpg", ".jpeg")) else "PNG"
        raise LoaderError(f"{name}: is not a {kind} image (its first bytes are not an image's); it may be another "
                          "type of file renamed, or damaged", code="unsupported")
    if not ocr_available():
        raise needs_ocr(name, "an image")
    image = open_image(data, name, options.ocr_max_pixels)
    budget.tick("OCR")
    try:
        text = read_image(image)
    except Exception as exc:  # the model failed on this image
        raise LoaderError(f"{name}: OCR failed ({reason(exc)}); open the image and save it again", code="undecodable"
                          ) from exc
    if not text:
        raise LoaderError(f"{name}: OCR found no text in the image; nothing to index", code="empty")
    budget.add(len(text))
    return Extracted(text, "ocr", (Place(0, IMAGE, 1, ocr=True),), (Phrase("load.read_by_ocr"),))


FORMAT = Format(("png", "jpg", "jpeg"), image_text)


def open_image(data: bytes, name: str, max_pixels: int) -> Any:
    """The decoded image (RGB, turned upright as its EXIF says), refused when over `max_pixels`."""
    from PIL import Image, ImageOps

    width, height = claimed_size(data)
    if width * height > max_pixels:
        raise LoaderError(f"{name}: the image is {width:,} x {height:,} pixels ({width * height / 1e6:.0f} MP), more "
                          f"than the {max_pixels / 1e6:g} MP OCR reads; shrink it or raise the setting "
                          "loader.ocr-max-pixels", code="too_large")
    try:
        image: Image.Image = Image.open(io.BytesIO(data))
        image.load()
        image = ImageOps.exif_transpose(image).convert("RGB")
    except LoaderError:
        raise
    except Exception as exc:  # PIL raises many types on damaged or truncated images
        raise LoaderError(f"{name}: could not read the image ({reason(exc)}); it may be damaged: open it and save "
                          "it again", code="undecodable") from None
    return image


def claimed_size(data: bytes) -> tuple[int, int]:
    """(width, height) a PNG or JPEG header claims, read before anything is decoded; (0, 0) when not found
    (then the decoder says what is wrong)."""
    if data.startswith(_PNG) and data[12:16] == b"IHDR":
        return struct.unpack(">II", data[16:24])
    at = 2
    while at + 9 < len(data) and data[at] == 0xFF:  # JPEG: walk the segments to the frame header (SOFn)
        marker, length = data[at + 1], struct.unpack(">H", data[at + 2:at + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return width, height
        at += 2 + length
    return 0, 0


def read_image(image: Any) -> str:
    """OCR of a PIL image: its text in reading order ("" when none is found)."""
    import numpy as np

    width, height = image.size
    if width * height > WORK_PIXELS:
        scale = (WORK_PIXELS / (width * height)) ** 0.5
        image = image.resize((max(1, int(width * scale)), max(1, int(height * scale))))
    with _engine_lock:
        result = recognise(_get_engine(), np.asarray(image))
    return clean_extracted(layout(result))


def recognise(engine: Any, pixels: Any, turned_once: bool = False) -> list[Any]:
    """rapidocr's boxes [(4 corner points, text, score), ...] scoring at least `MIN_SCORE`.

    The lines are read as they stand first: rapidocr's direction classifier (on by default) turns some upright
    lines of a page upside down (measured: one or two of six long English lines on a rendered page), they are then
    read as garbage and dropped for their low score, so a printed line went missing. Only when some box scores low
    is the page read again with the classifier, and each box keeps its better reading. When most boxes read better
    turned, the page is upside down (scanned so): it is turned and read again, as it stands."""
    plain, _ = engine(pixels, use_cls=False, text_score=0.0)
    plain = list(plain or [])
    if any(score < MIN_SCORE for _, _, score in plain):
        turned, _ = engine(pixels, use_cls=True, text_score=0.0)
        better = {_corners(points): (text, score) for points, text, score in turned or []}
        flipped = 0
        for n, (points, _text, score) in enumerate(plain):
            other = better.get(_corners(points))
            if other is not None and other[1] > score:
                plain[n] = (points, *other)
                flipped += other[1] >= MIN_SCORE
        if flipped * 2 > len(plain) and not turned_once:
            import numpy as np

            return recognise(engine, np.ascontiguousarray(pixels[::-1, ::-1]), turned_once=True)
    return [box for box in plain if box[2] >= MIN_SCORE]


MIN_SCORE = 0.5  # rapidocr's own default text_score: a box read with less confidence is noise


def _corners(points: Any) -> tuple[tuple[float, float], ...]:
    return tuple((round(float(p[0])), round(float(p[1]))) for p in points)


def _get_engine() -> Any:
    global _engine
    if _engine is None:
        from rapidocr_onnxruntime import RapidOCR

        _engine = RapidOCR()
    return _engine


# A box: (top, bottom, left, right, text), in the image's pixels.
Box = tuple[float, float, float, float, str]


def layout(boxes: list[Any]) -> str:
    """rapidocr's [(4 corner points, text, score), ...] as text in reading order: column by column when the page
    has columns (`columns`), each column (or the page) line by line (`lines_text`)."""
    items = boxes_of(boxes)
    if not items:
        return ""
    height = median(i[1] - i[0] for i in items) or 1.0
    blocks = columns(items, height)
    out: list[str] = []
    for n, (block, spanning) in enumerate(blocks):
        if n:  # a title across the columns stands apart; one column runs on into the next
            out.append("\n\n" if spanning or blocks[n - 1][1] else "\n")
        out.append(lines_text(block, height))
    return "".join(out)


def boxes_of(boxes: list[Any]) -> list[Box]:
    items = []
    for points, text, _score in boxes:
        text = " ".join(str(text).split())
        if text:
            ys = [p[1] for p in points]
            xs = [p[0] for p in points]
            items.append((min(ys), max(ys), min(xs), max(xs), text))
    return items


def columns(items: list[Box], height: float) -> list[tuple[list[Box], bool]]:
    """The boxes as blocks in reading order, each (boxes, spans the columns): one block when the page has no columns.

    Columns are told by their gutters (`gutters`). A box that crosses a gutter (a title, a caption or a footer across
    the page) is a block of its own and cuts the page into sections; within a section the columns are read left to
    right, each top to bottom."""
    cuts = gutters(items, height)
    if not cuts:
        return [(items, False)]
    spanning = sorted((i for i in items if any(_crosses(i, cut) for cut in cuts)), key=lambda i: i[0] + i[1])
    inside = [i for i in items if not any(_crosses(i, cut) for cut in cuts)]
    blocks: list[tuple[list[Box], bool]] = []
    for n in range(len(spanning) + 1):
        low = spanning[n - 1][0] + spanning[n - 1][1] if n else -math.inf
        high = spanning[n][0] + spanning[n][1] if n < len(spanning) else math.inf
        section = [i for i in inside if low <= i[0] + i[1] < high]
        for column in range(len(cuts) + 1):
            boxes = [i for i in section if _column(i, cuts) == column]
            if boxes:
                blocks.append((boxes, False))
        if n < len(spanning):
            if blocks and blocks[-1][1] and not section:  # lines across the page one after another: one block
                blocks[-1][0].append(spanning[n])
            else:
                blocks.append(([spanning[n]], True))
    return blocks


def gutters(items: list[Box], height: float) -> list[tuple[float, float]]:
    """The (left, right) of each gutter between columns of text: an x-band at least `MIN_GUTTER` lines wide that at
    most a quarter of the boxes cross (titles, an abstract, a centred page number), with text on both sides in the
    same rows for at least half the height of the page's text, and each column between two gutters filled by its
    lines as prose is (at least `MIN_COLUMN` lines wide, the median line at least half as wide as the column): a
    table's columns, or a label beside a paragraph, are not columns of text and are read line by line. [] when the
    page has no columns."""
    left, right = min(i[2] for i in items), max(i[3] for i in items)
    top, bottom = min(i[0] for i in items), max(i[1] for i in items)
    allowed = len(items) // 4
    edges = sorted({left, right, *(i[2] for i in items), *(i[3] for i in items)})
    crossing = [(a, b, sum(1 for i in items if i[2] < (a + b) / 2 < i[3])) for a, b in zip(edges, edges[1:])]
    bands: list[tuple[float, float]] = []
    run: list[tuple[float, float, int]] = []
    for piece in [*crossing, (right, right, len(items))]:
        if piece[2] <= allowed:
            run.append(piece)
            continue
        if run and run[0][0] > left:
            band = _narrowest(run)
            if band[1] - band[0] >= MIN_GUTTER * height:
                bands.append(band)
        run = []
    cuts = [band for band in bands if _both_sides(items, band) >= 0.5 * (bottom - top)]
    if not cuts:
        return []
    for column in range(len(cuts) + 1):
        boxes = [i for i in items if not any(_crosses(i, cut) for cut in cuts) and _column(i, cuts) == column]
        if len(boxes) < 2:
            return []
        width = max(i[3] for i in boxes) - min(i[2] for i in boxes)
        if width < MIN_COLUMN * height or median(i[3] - i[2] for i in boxes) < 0.5 * width:
            return []
    return cuts


MIN_GUTTER = 1.0  # lines: the narrowest gutter, in heights of a line (a space between words is a third of one)
MIN_COLUMN = 8.0  # lines: the narrowest column of text (a paper's column is some 20 lines' heights wide)


def _narrowest(run: list[tuple[float, float, int]]) -> tuple[float, float]:
    """A run of x-bands (left, right, boxes crossing) without its ends that more boxes cross than its fewest: the gutter
    proper, not the ends of the lines beside it that stick into it (a page number inside the gutter stays inside)."""
    fewest = min(piece[2] for piece in run)
    first = next(n for n, piece in enumerate(run) if piece[2] == fewest)
    last = max(n for n, piece in enumerate(run) if piece[2] == fewest)
    return run[first][0], run[last][1]


def _crosses(item: Box, cut: tuple[float, float]) -> bool:
    return item[2] < cut[1] and item[3] > cut[0]


def _column(item: Box, cuts: list[tuple[float, float]]) -> int:
    """Which column a box that crosses no gutter is in (0: left of the first gutter)."""
    return sum(1 for cut in cuts if item[2] >= cut[1])


def _both_sides(items: list[Box], cut: tuple[float, float]) -> float:
    """How tall the stretch is where there is text both left and right of `cut` (the overlap of the two sides'
    extents, from the boxes that do not cross it)."""
    left = [i for i in items if i[3] <= cut[0]]
    right = [i for i in items if i[2] >= cut[1]]
    if not left or not right:
        return 0.0
    return min(max(i[1] for i in left), max(i[1] for i in right)) - max(min(i[0] for i in left),
                                                                         min(i[0] for i in right))


def lines_text(items: list[Box], height: float) -> str:
    """Boxes as lines top to bottom, words left to right, a blank line where the gap between two lines is more than
    one and a half lines.

    A box joins the line above when its middle is within that line's first box's height and it is beside (not under)
    every box of the line: measured against the line's union instead, one tall box (a title, a box over two lines)
    made the line swallow the next printed line, whose words were then interleaved with it by x and read as one
    line, so a printed line went missing."""
    ordered = sorted(items, key=lambda i: ((i[0] + i[1]) / 2, i[2]))
    lines: list[list[Box]] = []
    for item in ordered:
        middle = (item[0] + item[1]) / 2
        line = lines[-1] if lines else None
        if line is not None and line[0][0] <= middle <= line[0][1] \
                and not any(item[2] < other[3] and other[2] < item[3] for other in line):
            line.append(item)
        else:
            lines.append([item])
    out: list[str] = []
    previous_bottom = None
    for line in lines:
        line.sort(key=lambda i: i[2])
        text = line[0][4]
        for item in line[1:]:
            joint = "" if _CJK.match(text[-1]) and _CJK.match(item[4][0]) else " "
            text += joint + item[4]
        top = min(i[0] for i in line)
        if previous_bottom is not None:
            out.append("\n\n" if top - previous_bottom > 1.5 * height else "\n")  # a blank line: a paragraph
        out.append(text)
        previous_bottom = max(i[1] for i in line)
    return "".join(out)
