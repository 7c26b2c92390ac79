"""Files written whole or not at all: the JSON and JSONL kept beside the index (chunk edits, document labels, test
sets) must survive a kill mid-write with their previous content."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """`text` into `path`, complete or not at all: written beside it, flushed, then renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_json_object(path: Path, damaged: str) -> dict:
    """The JSON object `write_atomic` left in `path` ({} when there is none yet). A file that cannot be read or is
    not JSON raises StoreError: `damaged` (what the file holds and what to do), naming the file and the cause."""
    from .errors import StoreError

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise StoreError(damaged.format(path=path, exc=exc)) from None
    return data if isinstance(data, dict) else {}
