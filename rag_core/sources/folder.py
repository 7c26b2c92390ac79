"""The `folder` source: a local or mounted folder, its files of the types the loaders read (loaders.iter_files:
hidden entries and unsupported types left out), narrowed by include/exclude globs on the path relative to the
folder (fnmatch: `*` matches across "/", so `*.md` takes every Markdown file, `drafts/*` a whole sub-folder)."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import RagError, SourceError
from ..loaders import iter_files
from .records import SourceItem


class FolderReader:
    """The SourceReader of a folder: each file's `version` is its size and mtime in nanoseconds, its `url` the
    file:// URI."""

    def __init__(self, location: str, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> None:
        self.root = Path(location).expanduser()
        self.include = tuple(include)
        self.exclude = tuple(exclude)

    def describe(self) -> str:
        return f"folder {self.root}"

    def _wanted(self, path: str) -> bool:
        if self.include and not any(fnmatch.fnmatchcase(path, g) for g in self.include):
            return False
        return not any(fnmatch.fnmatchcase(path, g) for g in self.exclude)

    def items(self) -> Iterator[SourceItem]:
        if not self.root.is_dir():
            raise SourceError(f"{self.describe()}: no such folder (unmounted, moved or deleted?); check the path")
        try:
            files = iter_files([self.root])
        except RagError as exc:
            raise SourceError(f"{self.describe()}: {exc}") from None
        real_root = os.path.realpath(self.root)
        for file, _ in files:
            if file.is_dir():  # a link to a folder outside it: not the folder's own
                continue
            path = file.relative_to(self.root).as_posix()
            if not self._wanted(path):
                continue
            try:
                st = file.stat()
            except OSError as exc:
                version = f"unreadable:{exc.strerror}"
            else:
                version = f"{st.st_size}:{st.st_mtime_ns}"
            yield SourceItem(path, _reader(file, path, real_root), version=version, url=file.absolute().as_uri())


def _reader(file: Path, path: str, real_root: str) -> Any:
    def read() -> bytes:
        if os.path.commonpath([os.path.realpath(file), real_root]) != real_root:
            raise SourceError(f"{path}: a link to a file outside the folder; not read")
        try:
            return file.read_bytes()
        except OSError as exc:
            raise SourceError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return read


def build(location: str, options: Mapping[str, Any], known: Mapping[str, str] | None = None, *,
          cache_dir: Path | None = None) -> FolderReader:
    """The reader of `sources add KB folder LOCATION --include G --exclude G` (`known` unused: a file's size and
    mtime are read anyway; no cache)."""
    unknown = sorted(set(options) - {"include", "exclude"})
    if unknown:
        raise SourceError(f"folder source {location}: unknown option {unknown[0]} (include, exclude)")
    return FolderReader(location, options.get("include") or (), options.get("exclude") or ())
