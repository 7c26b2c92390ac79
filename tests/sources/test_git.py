"""The git source's reader against real repositories the tests make with the `git` program: commits that add,
change, rename and delete files, a sub-folder, a second branch, a file type the loaders do not read."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_core.errors import SourceError
from rag_core.ports import SourceReader
from rag_core.sources.git import GitReader, git_reader, without_credentials
from rag_core.sources.records import SourceItem
from tests.contracts.sources import SourceReaderContract


class Repo:
    """A repository in a temporary folder, committed to by named authors."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True)
        self.git("init", "--quiet", "--initial-branch=main")

    def git(self, *args: str, author: str = "Ann") -> str:
        env = {**os.environ, "GIT_AUTHOR_NAME": author, "GIT_AUTHOR_EMAIL": f"{author.lower()}@example.org",
               "GIT_COMMITTER_NAME": author, "GIT_COMMITTER_EMAIL": f"{author.lower()}@example.org",
               "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
        done = subprocess.run(["git", "-C", str(self.root), *args], env=env, capture_output=True, text=True,
                              check=True)
        return done.stdout.strip()

    def write(self, **files: str | None) -> None:
        """Writes files (keyword `a__b_md` is "a/b.md": "__" a folder, the last "_" the dot); None deletes one."""
        for key, text in files.items():
            path = self.root / _name(key)
            if text is None:
                path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")

    def commit(self, message: str, author: str = "Ann") -> str:
        self.git("add", "--all", author=author)
        self.git("commit", "--quiet", "-m", message, author=author)
        return self.git("rev-parse", "HEAD")


def _name(key: str) -> str:
    folders, _, file = key.rpartition("__")
    stem, _, ext = file.rpartition("_")
    return f"{folders.replace('__', '/')}/{stem}.{ext}".lstrip("/")


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    repo = Repo(tmp_path / "repo")
    repo.write(README_md="# Runbooks\n", runbooks__disk_md="disk full: clean /var\n",
               runbooks__net_txt="check the switch\n", runbooks__diagram_svg="<svg/>", runbooks__tool_py="x = 1\n")
    repo.commit("first runbooks", author="Ann")
    return repo


def listed(reader: GitReader) -> dict[str, SourceItem]:
    return {item.path: item for item in reader.items()}


def reader_for(repo: Repo, tmp_path: Path, **options: object) -> GitReader:
    return git_reader(repo.root.as_uri(), options, cache_dir=tmp_path / "cache")


def test_lists_the_supported_files_of_the_default_branch_with_their_blob_versions(repo: Repo, tmp_path: Path) -> None:
    commit = repo.git("rev-parse", "HEAD")
    items = listed(reader_for(repo, tmp_path))
    assert list(items) == ["README.md", "runbooks/disk.md", "runbooks/net.txt"]  # .svg and .py: not loaders' types
    disk = items["runbooks/disk.md"]
    assert disk.read() == b"disk full: clean /var\n"
    assert disk.version == repo.git("rev-parse", "HEAD:runbooks/disk.md")
    assert disk.url == (repo.root / "runbooks/disk.md").as_uri() + f"#{commit}"
    assert disk.meta == {"commit": commit, "author": "Ann <ann@example.org>", "last_commit": commit,
                         "date": disk.meta["date"]}
    assert [name for name in os.listdir(tmp_path / "cache")] and not (tmp_path / "cache" / "runbooks").exists()


def test_each_commit_changes_exactly_the_versions_of_what_it_touched(repo: Repo, tmp_path: Path) -> None:
    reader = reader_for(repo, tmp_path)
    first = listed(reader)

    repo.write(runbooks__disk_md="disk full: clean /var and /tmp\n", runbooks__cpu_md="top\n")
    second_commit = repo.commit("disk: /tmp too; cpu", author="Bob")
    second = listed(reader)
    assert list(second) == ["README.md", "runbooks/cpu.md", "runbooks/disk.md", "runbooks/net.txt"]
    assert second["runbooks/disk.md"].version != first["runbooks/disk.md"].version
    assert second["runbooks/disk.md"].read() == b"disk full: clean /var and /tmp\n"
    assert second["README.md"].version == first["README.md"].version
    assert second["runbooks/disk.md"].meta["author"] == "Bob <bob@example.org>"
    assert second["runbooks/disk.md"].meta["last_commit"] == second_commit
    assert second["README.md"].meta["author"] == "Ann <ann@example.org>"
    assert second["README.md"].meta["last_commit"] != second_commit
    assert {item.meta["commit"] for item in second.values()} == {second_commit}

    repo.git("mv", "runbooks/net.txt", "runbooks/network.txt")
    repo.write(runbooks__cpu_md=None)
    third_commit = repo.commit("rename net, drop cpu", author="Cy")
    third = listed(reader)
    assert list(third) == ["README.md", "runbooks/disk.md", "runbooks/network.txt"]
    assert third["runbooks/network.txt"].version == first["runbooks/net.txt"].version  # same content, new path
    assert third["runbooks/network.txt"].meta["last_commit"] == third_commit
    assert third["runbooks/disk.md"].meta["last_commit"] == second_commit


def test_a_sub_folder_gives_paths_relative_to_it(repo: Repo, tmp_path: Path) -> None:
    items = listed(reader_for(repo, tmp_path, subfolder="runbooks/"))
    assert list(items) == ["disk.md", "net.txt"]
    assert items["disk.md"].url.startswith((repo.root / "runbooks/disk.md").as_uri() + "#")
    assert items["disk.md"].meta["author"] == "Ann <ann@example.org>"


def test_another_branch_and_the_default_branch_stay_apart(repo: Repo, tmp_path: Path) -> None:
    repo.git("checkout", "--quiet", "-b", "draft")
    repo.write(runbooks__draft_md="not yet\n")
    draft_commit = repo.commit("a draft", author="Dee")
    repo.git("checkout", "--quiet", "main")
    assert "runbooks/draft.md" not in listed(reader_for(repo, tmp_path))
    draft = listed(reader_for(repo, tmp_path, branch="draft"))
    assert draft["runbooks/draft.md"].meta == {"commit": draft_commit, "author": "Dee <dee@example.org>",
                                               "last_commit": draft_commit,
                                               "date": draft["runbooks/draft.md"].meta["date"]}
    assert draft["runbooks/draft.md"].read() == b"not yet\n"


def test_include_and_exclude_globs_on_the_relative_path(repo: Repo, tmp_path: Path) -> None:
    repo.write(runbooks__old__legacy_md="old\n", notes__draft_todo_md="todo\n")
    repo.commit("more")
    assert list(listed(reader_for(repo, tmp_path, include="*.md"))) == [
        "README.md", "notes/draft_todo.md", "runbooks/disk.md", "runbooks/old/legacy.md"]
    assert list(listed(reader_for(repo, tmp_path, include=["runbooks/**"], exclude=["runbooks/old/**"]))) == [
        "runbooks/disk.md", "runbooks/net.txt"]
    assert list(listed(reader_for(repo, tmp_path, exclude="draft*, *.txt"))) == [
        "README.md", "runbooks/disk.md", "runbooks/old/legacy.md"]
    assert list(listed(reader_for(repo, tmp_path, subfolder="runbooks", include="old/*"))) == ["old/legacy.md"]


def test_a_local_path_works_as_the_location(repo: Repo, tmp_path: Path) -> None:
    reader = git_reader(str(repo.root), {}, cache_dir=tmp_path / "cache")
    items = listed(reader)
    assert list(items) == ["README.md", "runbooks/disk.md", "runbooks/net.txt"]
    assert items["README.md"].url.startswith(repo.root.as_uri() + "/README.md#")


def one_line_error(reader: SourceReader) -> str:
    with pytest.raises(SourceError) as failed:
        list(reader.items())
    message = str(failed.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def test_a_missing_repository_branch_or_sub_folder_is_one_line(repo: Repo, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    message = one_line_error(git_reader(missing.as_uri(), {}, cache_dir=tmp_path / "cache"))
    assert message.startswith(f"git source {missing.as_uri()}: cannot be fetched (")
    message = one_line_error(reader_for(repo, tmp_path, branch="nope"))
    assert message == f"git source {repo.root.as_uri()}: branch 'nope' does not exist"
    message = one_line_error(reader_for(repo, tmp_path, subfolder="guides"))
    assert message.startswith(f"git source {repo.root.as_uri()}: sub-folder 'guides' does not exist at commit ")
    message = one_line_error(reader_for(repo, tmp_path, subfolder="README.md"))
    assert "sub-folder 'README.md' is not a folder" in message
    empty = Repo(tmp_path / "empty repo")
    assert one_line_error(git_reader(empty.root.as_uri(), {}, cache_dir=tmp_path / "cache")) == (
        f"git source {empty.root.as_uri()}: has no commits")
    with pytest.raises(SourceError, match="unknown option folder"):
        reader_for(repo, tmp_path, folder="runbooks")


def test_a_password_in_the_url_never_appears(tmp_path: Path) -> None:
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    url = f"http://ann:s3cret-pw@127.0.0.1:{port}/team/runbooks.git"
    reader = git_reader(url, {"branch": "main"}, cache_dir=tmp_path / "cache")
    message = one_line_error(reader)
    assert "s3cret-pw" not in message and "ann:" not in message
    assert message.startswith(f"git source http://127.0.0.1:{port}/team/runbooks.git: cannot be fetched (")
    assert "s3cret-pw" not in reader.describe() and "s3cret-pw" not in "".join(os.listdir(tmp_path / "cache"))
    assert without_credentials("fatal: 'https://u:p@h/r' and https://tok@h/x") == "fatal: 'https://h/r' and https://h/x"


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A loopback port that accepts connections and never answers (a git daemon that hangs)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def test_a_git_command_that_hangs_is_stopped_with_a_clear_line(silent_server: int, tmp_path: Path) -> None:
    reader = GitReader(f"git://127.0.0.1:{silent_server}/runbooks.git", tmp_path / "cache", timeout=1.0)
    message = one_line_error(reader)
    assert message == (f"git source git://127.0.0.1:{silent_server}/runbooks.git: git fetch did not finish in 1 s "
                       "(the repository is not answering?); try again later")


@pytest.mark.parametrize(("location", "url"), [
    ("https://tok:x@github.com/team/runbooks.git", "https://github.com/team/runbooks/blob/{c}/docs/a%20b.md"),
    ("https://gitlab.com/team/sub/runbooks", "https://gitlab.com/team/sub/runbooks/-/blob/{c}/docs/a%20b.md"),
    ("https://git.example.org/runbooks.git", "https://git.example.org/runbooks.git@{c}:docs/a b.md"),
    ("git@github.com:team/runbooks.git", "git@github.com:team/runbooks.git@{c}:docs/a b.md"),
])
def test_item_urls_point_at_the_file_at_its_commit(location: str, url: str, tmp_path: Path) -> None:
    reader = GitReader(location, tmp_path, subfolder="docs")
    assert reader._url("c0ffee", "a b.md") == url.format(c="c0ffee")


class TestGitReaderContract(SourceReaderContract):
    @pytest.fixture
    def reader(self, repo: Repo, tmp_path: Path) -> SourceReader:
        return reader_for(repo, tmp_path)

    @pytest.fixture
    def broken(self, reader: SourceReader, tmp_path: Path) -> tuple[SourceReader, str]:
        """A reader whose mirror is removed once it has listed the items: reading a file then fails."""

        class MirrorGone:
            def describe(self) -> str:
                return reader.describe()

            def items(self) -> Iterator[SourceItem]:
                listed = list(reader.items())
                shutil.rmtree(tmp_path / "cache")
                yield from listed

        return MirrorGone(), "README.md"

    @pytest.fixture
    def unreachable(self, tmp_path: Path) -> SourceReader:
        return git_reader(str(tmp_path / "no-such-repo"), {}, cache_dir=tmp_path / "cache")
