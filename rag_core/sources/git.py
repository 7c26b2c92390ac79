"""The `git` source (issue 38): the files of one branch of a Git repository, or of one folder in it, read through the
`git` program.

The repository (a URL or a local path) is fetched into a bare mirror in the reader's cache folder on every `items()`
call; files are listed with `git ls-tree` at the fetched commit and read with `git cat-file blob`, so nothing is
checked out. An item's version is its blob id: a file unchanged since the last sync is skipped without being read.
One `git log` pass, walking back from the commit until every listed file has been seen, gives each file the author
and commit that last touched it. Credentials in a URL never appear in a message, an item's URL or the cache's name.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from ..errors import SourceError
from ..loaders import SUPPORTED_EXTENSIONS
from .records import SourceItem

GIT_TIMEOUT = 600.0  # seconds one git command may take (a first fetch of a large repository is slow; a hang is not)
OPTIONS = ("branch", "subfolder", "include", "exclude")
_FORGES = {"github.com": "/blob/", "gitlab.com": "/-/blob/"}
_SUPPORTED = frozenset(SUPPORTED_EXTENSIONS)
_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]+@")


def without_credentials(text: str) -> str:
    """`text` with every `user:password@` after a URL scheme removed (for messages and URLs a person sees)."""
    return _CREDENTIALS.sub("", text)


@dataclass(frozen=True)
class _Commit:
    sha: str
    author: str
    date: str


class GitReader:
    """One branch (default: the remote's HEAD) and one folder (default: the whole tree) of a Git repository, the
    files the loaders support whose path relative to that folder matches `include` (default: all) and no `exclude`
    glob; hidden files and folders (".github/...") are left out, as when a folder is uploaded."""

    def __init__(self, location: str, cache_dir: Path, *, branch: str = "", subfolder: str = "",
                 include: Sequence[str] = (), exclude: Sequence[str] = (), timeout: float = GIT_TIMEOUT) -> None:
        if not location.strip():
            raise SourceError("git source: no repository given; give its URL or path")
        self.location = location.strip()
        self.branch = branch.strip()
        self.subfolder = subfolder.strip().strip("/")
        if ".." in self.subfolder.split("/"):
            raise SourceError(f"git source {self.name}: sub-folder {self.subfolder!r} may not contain '..'")
        self.include = tuple(include)
        self.exclude = tuple(exclude)
        self.timeout = timeout
        key = hashlib.sha256(self.name.encode()).hexdigest()[:16]
        self.mirror = Path(cache_dir) / f"git-{key}.git"

    @property
    def name(self) -> str:
        """The repository as a person may see it: its URL without credentials, or its path."""
        return without_credentials(self.location)

    @property
    def _local(self) -> Path | None:
        """The repository's folder when it is on this machine (a path or a file:// URL), else None."""
        if self.location.startswith("file://"):
            return Path(unquote(urlsplit(self.location).path))
        if "://" in self.location or re.match(r"^[^/]+@[^/]+:", self.location):
            return None
        return Path(self.location).expanduser()

    def describe(self) -> str:
        where = f", folder {self.subfolder}" if self.subfolder else ""
        return f"git {self.name} (branch {self.branch or 'default'}{where})"

    # -- items

    def items(self) -> Iterator[SourceItem]:
        commit = self._fetch()
        files = self._tree(commit)
        last = self._last_commits(commit, [self._full(path) for path, _ in files])
        for path, blob in files:
            meta = {"commit": commit}
            if (touched := last.get(self._full(path))) is not None:
                meta |= {"author": touched.author, "last_commit": touched.sha, "date": touched.date}
            yield SourceItem(path, self._reader(path, blob), version=blob, url=self._url(commit, path), meta=meta)

    def _fetch(self) -> str:
        """Fetches the branch into the mirror (made at the first call) and returns the commit it is at."""
        if not (self.mirror / "HEAD").is_file():
            self.mirror.parent.mkdir(parents=True, exist_ok=True)
            self._git("init", "--quiet", "--bare", str(self.mirror), what=f"cannot make its cache in {self.mirror}",
                      bare=False)
        ref = f"refs/heads/{self.branch}" if self.branch else "HEAD"
        kept = f"refs/sources/heads/{self.branch}" if self.branch else "refs/sources/HEAD"  # one per branch read
        fetch = ("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", self._fetch_location(), f"+{ref}:{kept}")
        try:
            self._git(*fetch, what="cannot be fetched")
        except _GitFailed as failed:
            if "couldn't find remote ref" in failed.detail:
                missing = f"branch {self.branch!r} does not exist" if self.branch else "has no commits"
                raise SourceError(f"git source {self.name}: {missing}") from None
            raise
        return self._git("rev-parse", "--verify", f"{kept}^{{commit}}", what="fetched no commit").decode().strip()

    def _fetch_location(self) -> str:
        local = self._local
        return str(local.resolve()) if local is not None and not self.location.startswith("file://") else self.location

    def _tree(self, commit: str) -> list[tuple[str, str]]:
        """(path relative to the sub-folder, blob id) of the files to list, sorted by path."""
        tree = f"{commit}:{self.subfolder}" if self.subfolder else commit
        if self.subfolder:
            try:
                kind = self._git("cat-file", "-t", tree, what="cannot be read").decode().strip()
            except _GitFailed:
                kind = ""
            if kind != "tree":
                found = "is not a folder" if kind else "does not exist"
                raise SourceError(f"git source {self.name}: sub-folder {self.subfolder!r} {found} "
                                  f"at commit {commit[:12]} of branch {self.branch or 'default'}")
        out = self._git("ls-tree", "-r", "-z", tree, what="cannot list its files")
        files = []
        for entry in out.split(b"\0"):
            if not entry:
                continue
            head, _, raw = entry.partition(b"\t")
            mode, kind, blob = head.decode().split(" ")
            path = raw.decode("utf-8", errors="replace")
            if kind == "blob" and mode != "120000" and self._wanted(path):
                files.append((path, blob))
        return sorted(files)

    def _wanted(self, path: str) -> bool:
        pure = PurePosixPath(path)
        if any(part.startswith(".") for part in pure.parts) or pure.suffix[1:].lower() not in _SUPPORTED:
            return False
        if self.include and not any(_glob(path, g) for g in self.include):
            return False
        return not any(_glob(path, g) for g in self.exclude)

    def _full(self, path: str) -> str:
        return f"{self.subfolder}/{path}" if self.subfolder else path

    def _last_commits(self, commit: str, paths: list[str]) -> dict[str, _Commit]:
        """For each path, the newest commit reachable from `commit` that touched it: one `git log` walk, stopped as
        soon as every path has been seen (merges are not diffed: a file gets the commit that changed it)."""
        remaining = set(paths)
        found: dict[str, _Commit] = {}
        if not remaining:
            return found
        args = ["log", "--no-renames", "--name-only", "-z", "--format=%x1e%H%x1f%an <%ae>%x1f%aI", commit]
        if self.subfolder:
            args += ["--", self.subfolder]
        with _Process(self._command(*args), self.timeout) as proc:
            pending = b""
            for block in iter(lambda: proc.stdout.read(1 << 16), b""):
                *records, pending = (pending + block).split(b"\x1e")
                for record in records:
                    self._seen(record, remaining, found)
                if not remaining:
                    break
            if remaining:
                if proc.wait() != 0:
                    raise SourceError(f"git source {self.name}: cannot read its history ({proc.failure()})")
                self._seen(pending, remaining, found)
        return found

    @staticmethod
    def _seen(record: bytes, remaining: set[str], found: dict[str, _Commit]) -> None:
        if not record:
            return
        header, *names = record.decode("utf-8", errors="replace").split("\0")
        fields = header.split("\x1f")
        if len(fields) != 3:
            return
        touched = _Commit(*fields)
        for name in names:
            name = name.removeprefix("\n")
            if name in remaining:
                remaining.discard(name)
                found[name] = touched

    def _reader(self, path: str, blob: str) -> Callable[[], bytes]:
        return lambda: self._git("cat-file", "blob", blob, what=f"{path} cannot be read")

    def _url(self, commit: str, path: str) -> str:
        full = self._full(path)
        local = self._local
        if local is not None:
            return (local.resolve() / full).as_uri() + f"#{commit}"
        parts = urlsplit(self.name)
        host = (parts.hostname or "").lower()
        if parts.scheme in ("https", "http") and host in _FORGES:
            repo = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/").removesuffix(".git"), "", ""))
            return f"{repo}{_FORGES[host]}{commit}/{quote(full)}"
        return f"{self.name}@{commit}:{full}"

    # -- running git

    def _command(self, *args: str, bare: bool = True) -> list[str]:
        return ["git", *(("--git-dir", str(self.mirror)) if bare else ()), *args]

    def _git(self, *args: str, what: str, bare: bool = True) -> bytes:
        """Runs git: its output, or SourceError "git source NAME: WHAT (git's reason)" (_GitFailed when git said
        why, so a caller can tell reasons apart)."""
        try:
            done = subprocess.run(self._command(*args, bare=bare), capture_output=True, timeout=self.timeout,
                                  env=_ENV, stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired:
            raise SourceError(f"git source {self.name}: git {args[0]} did not finish in {self.timeout:g} s "
                              f"(the repository is not answering?); try again later") from None
        except OSError as err:
            raise SourceError(f"git source {self.name}: cannot run the git program ({err.strerror}); "
                              "install git") from None
        if done.returncode != 0:
            detail = self._reason(done.stderr) or f"exit status {done.returncode}"
            raise _GitFailed(f"git source {self.name}: {what} ({detail})", detail)
        return done.stdout

    def _reason(self, stderr: bytes) -> str:
        lines = [line.strip() for line in stderr.decode("utf-8", errors="replace").splitlines() if line.strip()]
        fatal = [line.removeprefix("fatal: ") for line in lines if line.startswith("fatal: ")]
        reason = (fatal or lines or [""])[0]
        return without_credentials(reason.replace(self.location, self.name))


class _GitFailed(SourceError):
    """A git command failed; `detail` is git's reason."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


class _Process:
    """A git command whose output is read as a stream, killed when it outlives its timeout or is left early."""

    def __init__(self, command: list[str], timeout: float) -> None:
        self.timed_out = False
        self.timeout = timeout
        try:
            self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         stdin=subprocess.DEVNULL, env=_ENV)
        except OSError as err:
            raise SourceError(f"cannot run the git program ({err.strerror}); install git") from None
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.stdout: IO[bytes] = self.proc.stdout
        self.stderr: IO[bytes] = self.proc.stderr
        self.timer = threading.Timer(timeout, self._expire)
        self.timer.daemon = True

    def _expire(self) -> None:
        self.timed_out = True
        self.proc.kill()

    def wait(self) -> int:
        return self.proc.wait()

    def failure(self) -> str:
        """Why the command failed, in one line."""
        if self.timed_out:
            return f"git did not finish in {self.timeout:g} s"
        lines = [line for line in self.stderr.read().decode("utf-8", errors="replace").splitlines() if line.strip()]
        return without_credentials(lines[-1].removeprefix("fatal: ") if lines else "git failed")

    def __enter__(self) -> _Process:
        self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timer.cancel()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.stdout.close()
        self.stderr.close()


def _glob(path: str, pattern: str) -> bool:
    """Whether a relative path matches a glob: "runbooks/*.md" against the whole path (`*` crosses folders), a
    pattern without "/" against the file name ("*.md", "draft-*"), "**/x" at any depth, "old/**" under a folder."""
    pattern = pattern.strip().strip("/")
    if pattern.startswith("**/"):
        return _glob(path, pattern[3:]) or fnmatch.fnmatchcase(path, pattern)
    if pattern.endswith("/**"):
        return fnmatch.fnmatchcase(path, pattern[:-3] + "/*")
    if "/" not in pattern:
        return fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], pattern)
    return fnmatch.fnmatchcase(path, pattern)


_ENV = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": "", "LC_ALL": "C",
        "GIT_SSH_COMMAND": os.environ.get("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")}


def git_reader(location: str, options: Mapping[str, object], known: Mapping[str, str] | None = None, *,
               cache_dir: Path) -> GitReader:
    """The registry's factory for TYPE `git`: `options` are `branch`, `subfolder` (strings) and `include`, `exclude`
    (a list of globs, or one string of comma-separated globs); the mirror is kept in `cache_dir` (`known` unused: a
    blob id says whether a file changed)."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise SourceError(f"git source {without_credentials(location)}: unknown option {', '.join(unknown)}; "
                          f"known: {', '.join(OPTIONS)}")
    return GitReader(location, cache_dir, branch=str(options.get("branch") or ""),
                     subfolder=str(options.get("subfolder") or ""),
                     include=_globs(options.get("include")), exclude=_globs(options.get("exclude")))


def _globs(value: object) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)  # type: ignore[call-overload]
    return tuple(str(g).strip() for g in items if str(g).strip())
