"""Expanding the files and folders a person names into the files to load, in a deterministic order."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..errors import LoaderError
from .formats import SUPPORTED_EXTENSIONS, extension


def iter_files(paths: Sequence[Path]) -> list[tuple[Path, Path | None]]:
    """Expand files and folders into (file, root) pairs, in a deterministic order.

    Folders are walked recursively; their files come sorted by relative path, paired with the folder
    as root. Inside folders, hidden entries (".git", ".DS_Store"), Office lock files ("~$x.docx") and
    unsupported types are skipped. Symbolic links are never followed out of the folder: a linked file or
    folder whose target lies outside it is listed, so that loading it reports it as skipped (code
    "symlink_outside") instead of hiding it; a linked folder inside it is not walked again (its files are
    found under their real path). A file named explicitly is always kept
    (root None), even with an unsupported type, so the caller reports it as failed instead of
    silently ignoring it. A path listed twice, or a file also found in a listed folder, appears once.
    """
    given = [Path(p) for p in paths]
    missing = [str(p) for p in given if not p.exists() and not p.is_symlink()]
    if missing:
        raise LoaderError(f"no such file or folder: {', '.join(missing)}; check the path")
    out: list[tuple[Path, Path | None]] = []
    seen: set[str] = set()

    def add(file: Path, root: Path | None) -> None:
        key = os.path.abspath(file)
        if key not in seen:
            seen.add(key)
            out.append((file, root))

    for p in given:
        if p.is_dir():
            for f in _walk(p):
                add(f, p)
        else:
            add(p, None)
    return out


def _walk(root: Path) -> list[Path]:
    def fail(err: OSError) -> None:
        raise LoaderError(f"{err.filename}: cannot list this folder ({err.strerror}); check its permissions")

    found: list[Path] = []
    real_root = os.path.realpath(root)
    for dirpath, dirnames, filenames in os.walk(root, onerror=fail):  # never descends into linked folders
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for d in dirnames:
            link = os.path.join(dirpath, d)
            if os.path.islink(link) and os.path.commonpath([os.path.realpath(link), real_root]) != real_root:
                found.append(Path(link))
        for fn in filenames:
            if fn.startswith((".", "~$")):
                continue
            if extension(fn) in SUPPORTED_EXTENSIONS:
                found.append(Path(dirpath) / fn)
    found.sort(key=lambda f: f.relative_to(root).parts)
    return found
