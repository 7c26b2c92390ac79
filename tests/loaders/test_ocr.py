"""OCR (the `ocr` extra, rapidocr-onnxruntime): images and scanned pages rendered here from known Chinese and
English text, so what OCR should read is known; its bounds; and the refusal without the extra. The tests that run
OCR (seconds each) are `slow`: `make test-unit` leaves them out."""

from __future__ import annotations

import sys

import pytest

from rag_core.errors import LoaderError
from rag_core.loaders import LoadOptions, load_bytes
from rag_core.records import IMAGE, PAGE
from tests.loaders.checks import chunks_of
from tests.loaders.samples import CJK_FONT, cer, mixed_pdf, png_bytes, png_header, render_page, scanned_pdf

pytest.importorskip("rapidocr_onnxruntime", reason='the OCR extra is not installed: pip install ".[ocr]"')
if not CJK_FONT.is_file():
    pytest.skip(f"{CJK_FONT} is missing (Debian: fonts-noto-cjk): no Chinese text to render", allow_module_level=True)

LINES = ("Restart the payment gateway workers", "重启支付网关的工作进程", "Check the database pool first",
         "先检查数据库连接池")


@pytest.fixture(scope="module")
def page():
    return render_page(LINES, size=(900, 420), font_px=30)


@pytest.mark.slow  # runs OCR
def test_an_image_is_read_by_ocr(page) -> None:
    doc = load_bytes(png_bytes(page), "screens/runbook.png")
    assert cer(doc.text, "".join(LINES)) < 0.08, doc.text
    assert "payment gateway" in doc.text and "数据库连接池" in doc.text
    lines = [line for line in doc.text.splitlines() if line]
    assert len(lines) == len(LINES) and all(cer(a, b) < 0.15 for a, b in zip(lines, LINES)), lines  # in order
    assert (doc.encoding, doc.places, doc.ocr_pages) == ("ocr", doc.places, (1,))
    assert [(p.unit, p.ocr) for p in doc.places] == [(IMAGE, True)]
    assert [(c.location.label, c.location.ocr) for c in chunks_of(doc)] == [("image", True)]
    jpeg = page.copy()
    import io

    buf = io.BytesIO()
    jpeg.save(buf, format="JPEG", quality=90)
    assert "数据库连接池" in load_bytes(buf.getvalue(), "photo.jpg").text


@pytest.mark.slow  # runs OCR
def test_mixed_pdf_ocrs_only_the_page_without_text(page) -> None:
    seen: list[tuple[int, int]] = []
    doc = load_bytes(mixed_pdf("Page one has a text layer.", page), "mixed.pdf",
                     options=LoadOptions(on_page=lambda done, total: seen.append((done, total))))
    assert doc.text.startswith("Page one has a text layer.\n\n")
    assert [(p.unit, p.number, p.ocr) for p in doc.places] == [(PAGE, 1, False), (PAGE, 2, True)]
    assert doc.ocr_pages == (2,) and doc.encoding == "pdf+ocr"
    assert cer(doc.text[doc.places[1].offset:], "".join(LINES)) < 0.08
    assert seen == [(0, 1), (1, 1)]  # progress, page by page
    assert [(c.location.label, c.location.ocr) for c in chunks_of(doc, 60, 10)][-1] == ("p. 2", True)


def test_scanned_pdf_bounds(page) -> None:
    scan = scanned_pdf([page, page])
    with pytest.raises(LoaderError, match="2 pages have no text layer and need OCR, more than the 1") as info:
        load_bytes(scan, "scan.pdf", options=LoadOptions(ocr_max_pages=1))
    assert info.value.code == "too_large"
    with pytest.raises(LoaderError, match="longer than 0 seconds") as info:  # any reading is (whatever the machine)
        load_bytes(scan, "scan.pdf", options=LoadOptions(max_seconds=0.0))
    assert info.value.code == "too_slow"


@pytest.mark.parametrize(("data", "name", "fragment", "code"), [
    (b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, "broken.png", "could not read the image", "undecodable"),
    (png_header(100_000, 100_000), "huge.png", "100,000 x 100,000 pixels", "too_large"),
    (b"\xff\xd8\xff\xe0" + b"\x00" * 50, "cut.jpg", "could not read the image", "undecodable"),
])
def test_images_that_are_not_are_refused(data: bytes, name: str, fragment: str, code: str) -> None:
    with pytest.raises(LoaderError) as info:
        load_bytes(data, name)
    assert fragment in str(info.value) and info.value.code == code and "\n" not in str(info.value)


def test_without_the_extra_an_image_is_refused_naming_it(page, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)
    with pytest.raises(LoaderError) as info:
        load_bytes(png_bytes(page), "shot.png")
    assert str(info.value) == ('shot.png: an image; reading it needs OCR, an optional extra: pip install ".[ocr]" '
                               "(rapidocr-onnxruntime)")
    assert info.value.code == "needs_ocr"


@pytest.mark.slow  # runs OCR
def test_a_scanned_page_is_rendered_within_the_pixel_budget(page, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scanned PDF page is rendered for OCR at no more than `loader.ocr-max-pixels` (200 dpi when that fits)."""
    from rag_core.loaders import pdf

    sizes: list[tuple[int, int]] = []
    read = pdf.read_image
    monkeypatch.setattr(pdf, "read_image", lambda image: sizes.append(image.size) or read(image))
    scan = scanned_pdf([page])  # 900 x 420 pixels at 150 dpi: 1,200 x 561 at 200 dpi
    assert "数据库连接池" in load_bytes(scan, "scan.pdf").text
    doc = load_bytes(scan, "scan.pdf", options=LoadOptions(ocr_max_pixels=300_000))
    assert sizes[0] == (1200, 561) and 280_000 < sizes[1][0] * sizes[1][1] <= 300_000, sizes
    assert "payment gateway" in doc.text  # still read at that size


@pytest.mark.slow  # runs OCR
def test_ocr_reads_with_the_network_off(page, tmp_path) -> None:
    """The OCR models are inside the installed package: a fresh process with no network and an empty home reads
    an image (nothing is downloaded at run time)."""
    import os
    import subprocess

    (tmp_path / "shot.png").write_bytes(png_bytes(page))
    script = (
        "import socket, sys\n"
        "def refuse(*args, **kwargs):\n"
        "    raise OSError('the network is off in this test')\n"
        "socket.socket.connect = socket.create_connection = socket.getaddrinfo = refuse\n"
        "from rag_core.loaders import load_bytes\n"
        "print(load_bytes(open(sys.argv[1], 'rb').read(), 'shot.png').text)\n"
    )
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"), "NO_PROXY": "*"}
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "shot.png")], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert cer(done.stdout, "".join(LINES)) < 0.08, done.stdout
