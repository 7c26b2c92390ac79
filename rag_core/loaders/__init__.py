"""Files -> `Document`s: document ids, walking folders, text decoding, PDF and DOCX extraction.

One module per reason to change:

    doc_ids    the canonical doc_id of a path or name (`normalize_doc_id`, `doc_id_for`)
    folders    files and folders -> the files to load (`iter_files`)
    formats    the registry of formats: extension -> the extractor that reads it; the supported types
    extracted  what every extractor returns (`Extracted`) and declares (`Format`), and the helpers they share
    limits     bytes, characters and seconds one document may cost (decompression bombs)
    options    the other `loader.*` settings: OCR bounds, Q&A columns, OCR progress (`load_options`)
    load       bytes or a path -> Document (`load_bytes`, `load_path`): checks, then the format's extractor
    running    the running headers and footers of pages and slides, left out of the text (`drop_running`)
    text       text files: BOMs, UTF-8, binary detection
    legacy     text that is not UTF-8 (GB18030/GBK, Big5, EUC-KR, Windows-1252, ...)
    pdf, word  PDF (pages, tables, OCR of scanned pages) and DOCX extraction
    html       HTML pages: the main content as Markdown
    sheets     .xlsx, .csv, .tsv: one record per row, Q&A sheets
    slides     .pptx: one section per slide, speaker notes
    ocr        images and scanned pages (the optional `ocr` extra)
    packages   the checks every Office package (ZIP of XML) gets first

Everything other modules use is importable from `rag_core.loaders`. Every refusal is a `LoaderError`
whose `code` says why, for programs (`rag_core.errors.LOADER_ERROR_CODES`).
"""

from ..doc_ids import MAX_DOC_ID_BYTES, doc_id_for, join_doc_id, legacy_doc_id, normalize_doc_id
from .folders import iter_files
from .formats import SUPPORTED_EXTENSIONS, SUPPORTED_TEXT, TEXT_EXTENSIONS
from .limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_TEXT_CHARS
from .load import load_bytes, load_path, read_path
from .ocr import OCR_EXTRA, ocr_available
from .options import LoadOptions, load_options

__all__ = [
    "DEFAULT_MAX_BYTES", "DEFAULT_MAX_TEXT_CHARS", "MAX_DOC_ID_BYTES", "OCR_EXTRA", "SUPPORTED_EXTENSIONS",
    "SUPPORTED_TEXT", "TEXT_EXTENSIONS", "LoadOptions", "doc_id_for", "iter_files", "join_doc_id", "legacy_doc_id",
    "load_bytes", "load_options", "load_path", "normalize_doc_id", "ocr_available", "read_path",
]
