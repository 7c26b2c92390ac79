"""The chunk preview says what running headers and footers were left out of an uploaded PDF (AppTest), and its
cards cite the pages the text is on."""

from tests.loaders.running_samples import MANUAL_TITLE, manual_pdf
from tests.ui.apptest_helpers import app_at, texts


def test_the_preview_names_the_running_lines_it_left_out(kb):
    at = app_at("pages/chunk_preview.py")
    at.segmented_control(key="cp.source").set_value("Upload a file").run()
    at.file_uploader(key="cp.upload").set_value(("manual.pdf", manual_pdf(12, "chinese"), "application/pdf")).run()
    assert not at.exception
    note = f"running headers and footers left out of the text of 11 of 12 pages: “{MANUAL_TITLE}”, “第 N 页”"
    assert f"Structure: 12 pages with text · {note}" in texts(at, "caption")
    at.slider(key="cp.max_size").set_value(300).run()
    cards = [h.value for h in at.html if 'class="chunk-card"' in h.value]
    assert cards and sum(MANUAL_TITLE in c for c in cards) == 1  # the title page's own title only
    assert not any("第 3 页" in c for c in cards) and any(" p. 3" in c for c in cards)

