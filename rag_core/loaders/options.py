"""How some formats are read, beyond bytes and characters (`limits`): OCR bounds, Q&A columns, progress.

Built from the settings `loader.*` by `load_options`; the defaults are the settings' defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ConfigError
from .limits import DEFAULT_MAX_SECONDS

if TYPE_CHECKING:
    from ..config import Settings

DEFAULT_OCR_MAX_PIXELS = 40_000_000  # a 6,000 x 6,000 screenshot or photo; PDF pages are rendered under it
DEFAULT_OCR_MAX_PAGES = 200


@dataclass(frozen=True)
class LoadOptions:
    max_seconds: float = DEFAULT_MAX_SECONDS  # reading one file, OCR included
    ocr_max_pixels: int = DEFAULT_OCR_MAX_PIXELS  # per image or rendered page
    ocr_max_pages: int = DEFAULT_OCR_MAX_PAGES  # pages of one PDF that need OCR
    # Column headers of a Q&A sheet ("question", "answer" lower-cased), besides the names recognised by themselves
    qa_columns: tuple[str, str] | None = None
    # Called as pages are OCR'd: (pages read, pages to read), for progress bars; None: nobody is watching
    on_page: Callable[[int, int], None] | None = None


def parse_qa_columns(raw: str) -> tuple[str, str] | None:
    """"Symptom, Fix" -> ("symptom", "fix"); "" -> None. Raises ConfigError for anything else."""
    if not raw.strip():
        return None
    parts = [p.strip().lower() for p in raw.split(",")]
    if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
        raise ConfigError(f"loader.qa-columns = {raw!r} must name two different columns, question first, separated "
                          "by a comma, e.g. 'Symptom, Fix'.")
    return parts[0], parts[1]


def load_options(settings: Settings) -> LoadOptions:
    return LoadOptions(max_seconds=settings["loader.max-seconds"], ocr_max_pixels=settings["loader.ocr-max-pixels"],
                       ocr_max_pages=settings["loader.ocr-max-pages"],
                       qa_columns=parse_qa_columns(settings["loader.qa-columns"]))
