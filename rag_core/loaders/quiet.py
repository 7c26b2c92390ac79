"""What the reading libraries say while a document is read: heard per document, kept off the terminal.

pypdf reports a font it cannot fully parse through its logger, once per font per page (58 lines, ~90 KB on one
real PDF); openpyxl warns through `warnings`, and Python prints the library's install path with it. Neither is
something a person ingesting a file can act on line by line. So while `heard(doc_id)` is open, both are caught in
the thread reading the document, counted by what they say (a message's template: pypdf puts the whole font
dictionary into its text, so the formatted messages all differ), logged once each with the count (logger
`rag_core.loaders.quiet`) and returned as the document's notes (`load.library_warning`).

Per thread, because documents are read in several threads at once (the app's sessions share one Ingestor; the
HTTP service reads uploads in its thread pool): `warnings.catch_warnings` swaps process-wide state (the filters and
`showwarning`), so a capture in one thread would swallow, or restore over, another thread's. Instead two hooks are
installed once per process and look up the calling thread's capture (a `threading.local`):
- `warnings.showwarning` is wrapped: a warning raised in a thread that is reading a document is counted there,
  any other goes to the function it wrapped (printed as before). Python shows a warning once per place in the
  library's code (its default filter), and remembers that per module; the memory is reset when a capture opens
  (`warnings._filters_mutated`), so the next document hears it again.
- the library loggers (`LIBRARY_LOGGERS`) get a handler and stop propagating: a record logged in a reading thread is
  counted there, any other is handed to the root logger as propagation would have (its handlers, or Python's
  last-resort handler on stderr), so logging configured by the host behaves as before outside a read.
"""

from __future__ import annotations

import logging
import re
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..phrases import Phrase

log = logging.getLogger(__name__)

# The libraries the loaders read with (and what they read with); their loggers' records in a reading thread are heard.
LIBRARY_LOGGERS = ("pypdf", "PyPDF2", "pdfplumber", "pdfminer", "pypdfium2", "openpyxl", "docx", "pptx", "PIL",
                   "fontTools", "lxml", "rapidocr_onnxruntime", "rapidocr", "onnxruntime")
MAX_KINDS = 50  # distinct messages kept per document; more are counted under the last
MESSAGE_CHARS = 300  # of a message in a note
LOGGED_CHARS = 2000  # of the first full message in the log
_PLACEHOLDER = re.compile(r"%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[sdifrxXeEgGc]")
_SITE = re.compile(r"[/\\](?:site|dist)-packages[/\\]([A-Za-z0-9_]+)")
_WS = re.compile(r"\s+")


@dataclass
class _Kind:
    library: str
    message: str  # the template: what is counted and shown
    first: str  # the first one in full, for the log
    count: int = 0


@dataclass
class Heard:
    """What the libraries said while one document was read, by (library, message), in the order first heard."""

    doc_id: str
    kinds: dict[tuple[str, str], _Kind] = field(default_factory=dict)

    def add(self, library: str, message: str, first: str) -> None:
        key = (library, message)
        if key not in self.kinds and len(self.kinds) >= MAX_KINDS:
            key = (library, "(other messages)")
        kind = self.kinds.setdefault(key, _Kind(key[0], key[1], first))
        kind.count += 1

    def notes(self) -> tuple[Phrase, ...]:
        return tuple(Phrase("load.library_warning", {"library": k.library, "message": k.message, "count": k.count})
                     for k in self.kinds.values())

    def log(self) -> None:
        for k in self.kinds.values():
            log.warning("%s: %s warned %d time%s: %s", self.doc_id, k.library, k.count, "s" * (k.count != 1),
                        k.first[:LOGGED_CHARS])


_local = threading.local()
_install_lock = threading.Lock()
_installed_loggers = False


def _current() -> Heard | None:
    return getattr(_local, "heard", None)  # a threading.local has the attribute only in threads that set it


@contextmanager
def heard(doc_id: str) -> Iterator[Heard]:
    """Catch what the libraries say in this thread while the block runs; then log it, once per message with its
    count. The caller adds `Heard.notes()` to the document's notes. Nested use (a loader loading another document)
    hears into the outer document."""
    outer = _current()
    if outer is not None:
        yield outer
        return
    _install()
    _forget_shown()
    current = Heard(doc_id)
    _local.heard = current
    try:
        yield current
    finally:
        _local.heard = None
        current.log()


def _forget_shown() -> None:
    """Python's memory of the warnings it showed once (each module's `__warningregistry__`) is dropped lazily when
    the filters change; say they did, so this document hears a warning an earlier one already did."""
    mutated = getattr(warnings, "_filters_mutated", None) or getattr(warnings, "_filters_mutated_lock_held", None)
    if mutated is not None:
        mutated()


def _install() -> None:
    global _installed_loggers
    with _install_lock:
        if not getattr(warnings.showwarning, "_rag_quiet", False):  # again after a catch_warnings restored it
            warnings.showwarning = _wrap(warnings.showwarning)
        if not _installed_loggers:
            handler = _Divert()
            for name in LIBRARY_LOGGERS:
                logger = logging.getLogger(name)
                logger.addHandler(handler)
                logger.propagate = False
            _installed_loggers = True


def _wrap(shown: Any) -> Any:
    def showwarning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                    file: Any = None, line: str | None = None) -> None:
        current = _current()
        if current is None:
            shown(message, category, filename, lineno, file, line)
            return
        text = _one_line(str(message))
        current.add(_library_of(filename, category), text[:MESSAGE_CHARS], f"{category.__name__}: {text}")

    showwarning._rag_quiet = True  # type: ignore[attr-defined]
    return showwarning


def _library_of(filename: str, category: type[Warning]) -> str:
    """The package a warning came from, by where its code is installed (`.../site-packages/openpyxl/...`): the
    name a person recognises, without the path."""
    found = _SITE.search(filename or "")
    return found.group(1) if found else category.__name__


class _Divert(logging.Handler):
    """On the library loggers: a record logged while this thread reads a document is heard; any other goes on to
    the root logger, as it would have propagated."""

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)

    def emit(self, record: logging.LogRecord) -> None:
        current = _current()
        if current is None or record.levelno < logging.WARNING:
            logging.getLogger().handle(record)
            return
        try:
            first = _one_line(record.getMessage())
        except Exception:  # noqa: BLE001 - a library's malformed message must not stop the read
            first = str(record.msg)
        template = _one_line(_PLACEHOLDER.sub("…", str(record.msg)))
        current.add(record.name.split(".", 1)[0], template[:MESSAGE_CHARS], f"{record.levelname}: {first}")

    def handle(self, record: logging.LogRecord) -> bool:  # no lock: emit only counts into this thread's own Heard
        self.emit(record)
        return True


def _one_line(text: str) -> str:
    return _WS.sub(" ", text).strip()
