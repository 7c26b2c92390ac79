"""What commands print, written once: exit statuses, JSON on stdout, tables, report lines, and the progress bars
(tqdm, on stderr, so `--json` output stays one JSON document; none with `--quiet`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..evaluation.runner import EvalProgress
    from ..ingest import IngestProgress

EXIT_FAILED_FILES = 1  # the command ran, and some of its files, documents or queries failed (each says why)
EXIT_ERROR = 2  # an error meant for people: one `error: ...` line on stderr
EXIT_OUTPUT_CLOSED = 141  # 128 + SIGPIPE: what `yes | head` reports for `yes`


def print_json(value: Any, *, indent: int = 2) -> None:
    """`value` as one JSON document on stdout (text as it is, not \\u-escaped; anything else by its str)."""
    json.dump(value, sys.stdout, ensure_ascii=False, indent=indent, default=str)
    sys.stdout.write("\n")


def json_line(value: Any) -> str:
    """`value` as JSON on one line, for outputs of one JSON object per line (`search --queries`, `chat --json`)."""
    return json.dumps(value, ensure_ascii=False, default=str)


def format_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str],
                 headers: Mapping[str, str] | None = None) -> str:
    """`rows` as right-aligned text columns under a header and a rule. `headers`: shorter names of some columns."""
    def show(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
        return str(value)

    header = [(headers or {}).get(c, c) for c in columns]
    cells = [[show(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(header)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def report_line(r: Any) -> str:
    """One IngestReport of a rebuild (reindex, rebuild, kb copy) as a line: status, document, chunks or error."""
    notes = "".join(f"; {n}" for n in getattr(r, "notes", ()))  # how it was read: OCR'd pages, Q&A sheets
    return f"{r.status:<9} {r.doc_id or r.path}  {r.error or f'{r.chunks} chunks'}{notes}"


# ---------------------------------------------------------------------------------------- progress bars
def _bar(total: int, unit: str) -> Any:
    """A tqdm bar on stderr. tqdm is imported here: a --quiet run never loads it."""
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, file=sys.stderr, dynamic_ncols=True)


class _Quiet:
    def update(self, n: int) -> None:
        pass


@contextmanager
def count_bar(total: int, unit: str, enabled: bool) -> Iterator[Any]:
    """A bar counting `unit`s (`.update(1)` after each), or an object whose `update` does nothing when disabled."""
    if not enabled:
        yield _Quiet()
        return
    with _bar(total, unit) as bar:
        yield bar


@contextmanager
def ingest_progress_bar(enabled: bool) -> Iterator[Callable[[IngestProgress], None]]:
    """An ingest progress callback (ingest.IngestProgress events) drawing the chunks of the current file."""
    if not enabled:
        yield lambda _: None
        return
    from ..ingest import ocr_step

    bars: list[Any] = []  # drawn at the first event: a command refused before any work draws none

    def update(p: IngestProgress) -> None:
        if not bars:
            bars.append(_bar(0, "chunk"))
        bar = bars[0]
        stage = ocr_step(p.done, p.total) if p.stage == "ocr" else p.stage
        bar.set_description(f"[{p.file_index + 1}/{p.files_total}] {stage} {p.name[-40:]}")
        if p.stage in ("embedding", "ocr"):  # chunks embedded, or pages read by OCR ("ocr n/m")
            if p.done == 0 or bar.total != p.total:
                bar.reset(total=p.total)
            bar.unit = "page" if p.stage == "ocr" else "chunk"
            bar.n = p.done
        bar.refresh()

    try:
        yield update
    finally:
        for bar in bars:
            bar.close()


@contextmanager
def progress_bar(enabled: bool, description: str, unit: str = "chunk") -> Iterator[Callable[[int, int], None]]:
    """A (done, total) callback drawing a bar of `unit`s, drawn at its first call; one doing nothing when disabled."""
    bars: list[Any] = []

    def update(done: int, total: int) -> None:
        if not enabled:
            return
        if not bars:
            bars.append(_bar(total, unit))
            bars[0].set_description(description)
        bars[0].total, bars[0].n = total, done
        bars[0].refresh()

    try:
        yield update
    finally:
        for bar in bars:
            bar.close()


@contextmanager
def ocr_progress_bar(enabled: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A `LoadOptions.on_page` callback drawing "OCR page n/m" while a file's scanned pages are read; None when
    disabled. Nothing is drawn for a file that needs no OCR."""
    if not enabled:
        yield None
        return
    from ..ingest import ocr_step

    bars: list[Any] = []

    def update(done: int, total: int) -> None:
        if not bars:
            bars.append(_bar(total, "page"))
        bars[0].set_description(ocr_step(done, total))
        bars[0].n = done
        bars[0].refresh()

    try:
        yield update
    finally:
        for bar in bars:
            bar.close()


@contextmanager
def stage_progress_bar(enabled: bool) -> Iterator[Callable[[EvalProgress], None] | None]:
    """An evaluation progress callback (its `stage`, `total`, `done` and `detail`): characters while indexing,
    queries while searching, the combination being run as the description. None when disabled."""
    if not enabled:
        yield None
        return
    bar = _bar(0, "step")
    state = {"stage": "", "detail": ""}

    def update(p: EvalProgress) -> None:
        if (p.stage, p.total) != (state["stage"], bar.total):
            state["stage"] = p.stage
            bar.unit = {"indexing": "char", "reading": "doc", "generating": "item", "answering": "item"}.get(
                p.stage, "query")
            bar.unit_scale = p.stage == "indexing"  # 1.2M/3.4M characters
            bar.reset(total=p.total)
        if p.detail != state["detail"]:  # the combination being run changes during a sweep
            state["detail"] = p.detail
            if len(p.detail) > 60:  # e.g. an index's expected time: said whole, once
                bar.write(p.detail, file=sys.stderr)
            bar.set_description(p.detail[:60], refresh=False)
        bar.n = p.done
        bar.refresh()

    try:
        yield update
    finally:
        bar.close()
