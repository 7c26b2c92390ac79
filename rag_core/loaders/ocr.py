"""OCR: text from images (.png, .jpg) and from PDF pages without a text layer, with rapidocr-onnxruntime.

rapidocr-onnxruntime 1.4 carries PP-OCRv4's Chinese/English detection, direction and recognition models
inside its wheel (Apache-2.0), so nothing is downloaded at run time. It is the optional extra `ocr`
(`pip install ".[ocr]"`, which `make run` and `make test` install); without it an image or a scanned PDF is
refused in one line naming the extra (code "needs_ocr").

Bounded: an image larger than `loader.ocr-max-pixels` is refused before it is decoded (a PNG of a few KB
can claim 100,000 x 100,000 pixels); images are shrunk to `WORK_PIXELS` before OCR (detection costs grow with
pixels, recognition does not need more); a PDF needing OCR on more than `loader.ocr-max-pages` pages is
refused before any is read; the deadline (`loader.max-seconds`) is checked before every page.

The boxes the model finds are put back in reading order: lines by vertical overlap, words left to right
(a space between them unless both sides are Chinese, Japanese or Korean), a blank line where the gap between
lines is more than one and a half lines (a new paragraph).
"""

from __future__ import annotations

import importlib.util
import io
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
        result, _ = _get_engine()(np.asarray(image))
    return clean_extracted(layout(result or []))


def _get_engine() -> Any:
    global _engine
    if _engine is None:
        from rapidocr_onnxruntime import RapidOCR

        _engine = RapidOCR()
    return _engine


def layout(boxes: list[Any]) -> str:
    """rapidocr's [(4 corner points, text, score), ...] as text: lines top to bottom, words left to right."""
    items = []
    for points, text, _score in boxes:
        text = " ".join(str(text).split())
        if not text:
            continue
        ys = [p[1] for p in points]
        xs = [p[0] for p in points]
        items.append((min(ys), max(ys), min(xs), text))
    if not items:
        return ""
    items.sort(key=lambda i: ((i[0] + i[1]) / 2, i[2]))
    lines: list[list[tuple[float, float, float, str]]] = []
    for item in items:
        middle = (item[0] + item[1]) / 2
        line = lines[-1] if lines else None
        if line is not None and min(i[0] for i in line) <= middle <= max(i[1] for i in line):
            line.append(item)
        else:
            lines.append([item])
    height = median(i[1] - i[0] for i in items) or 1.0
    out: list[str] = []
    previous_bottom = None
    for line in lines:
        line.sort(key=lambda i: i[2])
        text = line[0][3]
        for item in line[1:]:
            joint = "" if _CJK.match(text[-1]) and _CJK.match(item[3][0]) else " "
            text += joint + item[3]
        top = min(i[0] for i in line)
        if previous_bottom is not None:
            out.append("\n\n" if top - previous_bottom > 1.5 * height else "\n")  # a blank line: a paragraph
        out.append(text)
        previous_bottom = max(i[1] for i in line)
    return "".join(out)
