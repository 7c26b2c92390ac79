"""Where a command that reads documents logs what the reading libraries warned: `<data dir>/logs/loaders.log`.

The loaders hear the libraries' warnings per document and log each once with its count (`loaders.quiet`); the
report's notes carry them too. The CLI configures no logging, so Python would print those records on stderr
(its last-resort handler): one line per document, in the middle of a progress bar or of a `--quiet` run. So
for the command's run they go to a file in the data folder instead, opened only when there is something to
write; a file that cannot be written costs the log, never the run (the notes still say it).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..config import Settings
from ..loaders.quiet import log as loaders_log

LOG_NAME = "loaders.log"


class _QuietFileHandler(logging.FileHandler):
    """Made before anything is logged; the folder and file only when a record comes."""

    def _open(self) -> Any:
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        return super()._open()

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        pass  # a log that cannot be written is not the run's failure


@contextmanager
def library_log(settings: Settings) -> Iterator[None]:
    """While the block runs, the loaders' log goes to `<data dir>/logs/loaders.log`, not the terminal."""
    handler = _QuietFileHandler(settings.data_dir / "logs" / LOG_NAME, encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    propagate = loaders_log.propagate
    loaders_log.addHandler(handler)
    loaders_log.propagate = False
    try:
        yield
    finally:
        loaders_log.removeHandler(handler)
        loaders_log.propagate = propagate
        handler.close()
