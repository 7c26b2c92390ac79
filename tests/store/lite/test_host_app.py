"""The Streamlit app and CLI commands on one data dir at the same time (shared mode, as users get it):
the app in a real browser, the CLI as separate processes, one store host serving them all."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

from rag_core.store.lite import host_client
from tests.e2e.conftest import start_app, stop_app
from tests.e2e.helpers import open_page, wait_idle
from tests.helpers import REPO
from tests.store.lite.test_host import cli_env

pytestmark = pytest.mark.e2e


def run_cli(data: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rag_core", "--data-dir", str(data), *args], cwd=REPO,
                          env=cli_env(), capture_output=True, text=True, timeout=300)


def test_app_and_cli_use_one_knowledge_base_at_once(browser, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    cli_doc = tmp_path / "zebra_crossings.md"
    cli_doc.write_text("# Zebra crossings\n\nRepaint the zebra crossings every spring. 斑马线每年春天重新粉刷。\n",
                       encoding="utf-8")
    app_doc = tmp_path / "walrus_feeding.md"
    app_doc.write_text("# Walrus feeding\n\nThe walrus gets herring at noon.\n", encoding="utf-8")
    server = start_app(data, extra_env={"RAG_MILVUS_HOST_IDLE": "60"})

    def steps(page) -> None:  # noqa: ANN001
        open_page(page, server.url, "debugger?q=zebra%20crossings", heading="🔎 Retrieval debugger")
        expect(page.get_by_text("The knowledge base is empty")).to_be_visible()
        # A CLI command writes while the app has the knowledge base open...
        ingest = run_cli(data, "ingest", str(cli_doc), "--quiet")
        assert ingest.returncode == 0 and "1 added" in ingest.stdout, ingest.stderr
        # ... and the app finds it at once.
        open_page(page, server.url, "debugger?q=zebra%20crossings", heading="🔎 Retrieval debugger")
        expect(page.locator(".hit-row", has_text="zebra_crossings.md#chunk-0")).to_be_visible()
        # The app writes (a browser upload) while CLI commands read.
        open_page(page, server.url, "knowledge_base", heading="📚 Knowledge base")
        page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files([app_doc])
        expect(page.get_by_text("walrus_feeding.md").first).to_be_visible()
        wait_idle(page)
        page.get_by_role("button", name=re.compile(r"Ingest 1 file")).click()
        expect(page.get_by_text("Ingest finished: 1 added.")).to_be_visible()

    context = browser.new_context(viewport={"width": 1440, "height": 1400})
    try:
        page = context.new_page()
        page.set_default_timeout(60_000)
        steps(page)
        search = run_cli(data, "search", "walrus herring", "--json")
        assert search.returncode == 0, search.stderr
        assert json.loads(search.stdout)["evidence"][0]["doc_id"] == "walrus_feeding.md"
        running = host_client.status((data / "milvus.db").absolute())
        assert running is not None and any("streamlit" in c for c in running.clients)  # the app is a client
    finally:
        context.close()
        stop_app(server)
