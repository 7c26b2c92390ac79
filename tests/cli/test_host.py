"""The CLI around the store host: `host status|stop`, and output to a reader that went away."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rag_core.cli import main
from tests.helpers import REPO


@pytest.mark.milvus
def test_output_to_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`python -m rag_core docs --json | head`: head exits first; no "unexpected failure", no traceback."""
    process = subprocess.Popen([sys.executable, "-m", "rag_core", "--data-dir", str(tmp_path), "docs", "--json"],
                               cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # the reader is gone before anything is written
    err = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141 and err == ""


def test_status_without_a_host_and_on_a_server_uri(tmp_path: Path, capsys) -> None:
    assert main(["--data-dir", str(tmp_path), "host"]) == 0
    assert "no store host is running for" in capsys.readouterr().out
    assert main(["--data-dir", str(tmp_path), "host", "stop"]) == 0
    assert "no store host is running" in capsys.readouterr().out
    assert main(["--data-dir", str(tmp_path), "--set", "milvus.uri=http://127.0.0.1:1", "host"]) == 2
    assert "names a Milvus server: there is no store host" in capsys.readouterr().err
