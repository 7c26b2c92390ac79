"""Real-browser tests: `streamlit run app.py` on a free loopback port with an isolated data dir,
driven by Playwright with Debian's Chromium (never `playwright install`).

Without /usr/bin/chromium the tests fail under CI (`CI=true`, where `.ci/run` installs it) and skip
elsewhere with the reason. Every test leaves a screenshot in tests/e2e/screenshots/ (git-ignored).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic", "--disable-dev-shm-usage"]
# Documents indexed before the server starts, so pages have something to show without uploads.
SEED_FILES = ["examples/kb/runbooks/cpu_high.md", "examples/kb/runbooks/disk_full.md"]
# Keys that would switch the chat away from offline mode, or point the app at another store.
ISOLATE_ENV = ("DASHSCOPE_API_KEY", "OPENAI_API_KEY", "MILVUS_URI", "MILVUS_TOKEN", "RAG_CONFIG")


def _chromium_or_skip() -> None:
    if Path(CHROMIUM).is_file():
        return
    reason = (f"Chromium not found at {CHROMIUM}: install Debian's package (`apt-get install -y chromium`) "
              "to run the real-browser tests.")
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason + " CI=true, so this is a failure, not a skip.", pytrace=False)
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class AppServer:
    url: str
    data_dir: Path
    process: subprocess.Popen
    log: Path

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def seed(data_dir: Path, files: list[str]) -> None:
    """Index `files` into `data_dir` in this process, then close the store (releasing the Lite lock)."""
    from rag_core.bootstrap import build_workbench
    from rag_core.config import load_settings

    wb = build_workbench(load_settings(data_dir=data_dir, env={}))
    try:
        reports = wb.ingestor.ingest_paths([REPO / f for f in files])
        assert all(r.status == "added" for r in reports), reports
    finally:
        wb.close()


def start_app(data_dir: Path, extra_env: Mapping[str, str] | None = None, timeout: float = 60.0) -> AppServer:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ISOLATE_ENV and not k.startswith("RAG_")}
    env.update({"RAG_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1", **(extra_env or {})})
    log = data_dir / "streamlit.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    server = AppServer(f"http://127.0.0.1:{port}", data_dir, process, log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with {process.returncode}:\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(f"{server.url}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    return server
        except OSError:
            pass
        time.sleep(0.25)
    stop_app(server)
    raise RuntimeError(f"streamlit did not become healthy in {timeout:.0f}s:\n{server.log_tail()}")


def stop_app(server: AppServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(timeout=15)


@pytest.fixture(scope="session")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """One app for the session, offline chat, seeded with two runbooks."""
    _chromium_or_skip()
    data_dir = tmp_path_factory.mktemp("e2e-data")
    seed(data_dir, SEED_FILES)
    server = start_app(data_dir)
    yield server
    stop_app(server)


@pytest.fixture
def page(browser, app_server: AppServer, request: pytest.FixtureRequest) -> Iterator[object]:
    """A fresh browser tab (its own Streamlit session); a screenshot of its last state is saved."""
    context = browser.new_context(viewport={"width": 1440, "height": 1400}, locale="en-US")
    context.set_default_timeout(30_000)
    tab = context.new_page()
    yield tab
    SCREENSHOTS.mkdir(exist_ok=True)
    try:
        tab.screenshot(path=str(SCREENSHOTS / f"{request.node.name}.png"))
    finally:
        context.close()

