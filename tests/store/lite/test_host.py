"""Shared mode: one store host process serves a Milvus Lite file to every workbench process.

Real processes throughout: the host is always a separate process; CLI commands run as subprocesses
where the test is about two programs at once. `milvus.lite-mode = shared` is what users get by default
(the rest of the suite opens its throw-away databases in exclusive mode, see tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rag_core.cli import main
from rag_core.errors import StoreLockedError
from rag_core.store.lite import host_client
from rag_core.store.lite import lock as lite_lock
from rag_core.store.lite.host import HostFiles, read_endpoint
from rag_core.store.lite.processes import ProcessId
from tests.helpers import REPO, SAMPLE_KB, make_workbench
from tests.store.clients import FailingClient

pytestmark = pytest.mark.milvus  # opens Milvus Lite in its tests: not in `make test-unit`

SHARED = {"milvus.lite-mode": "shared", "milvus.host-idle": 30}


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_") and k != "MILVUS_URI"}
    return {**env, "RAG_MILVUS_LITE_MODE": "shared", "RAG_MILVUS_HOST_IDLE": "30", **extra}


def cli(data: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rag_core", "--data-dir", str(data), *args], cwd=REPO,
                            env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(process: subprocess.Popen) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=300)
    return process.returncode, out, err


def wait_gone(pid: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while ProcessId(pid, 0).alive():  # a zombie (a host this process started, not yet reaped) is gone
        if time.monotonic() > deadline:
            pytest.fail(f"pid {pid} still runs")
        time.sleep(0.05)


def test_two_cli_processes_at_once_share_one_host(tmp_path: Path, local_embedder) -> None:
    data = tmp_path / "data"
    first = cli(data, "ingest", str(SAMPLE_KB / "runbooks" / "disk_full.md"), "--prefix", "runbooks", "--quiet",
                "--json")
    second = cli(data, "ingest", str(SAMPLE_KB / "policies" / "oncall_zh.md"), "--prefix", "policies", "--quiet",
                 "--json")
    for process in (first, second):
        code, out, err = finished(process)
        assert code == 0, err
        assert {r["status"] for r in json.loads(out)} == {"added"}
        assert "already open" not in err and "Traceback" not in err
    endpoint = read_endpoint(HostFiles((data / "milvus.db").absolute()))
    assert endpoint is not None and endpoint.alive()  # one host served all three, and still runs
    owner = lite_lock.owner_file(data / "milvus.db")
    assert owner.read_text() == f"pid {endpoint.host_pid} (store host)"
    reader = make_workbench(data, embedder=local_embedder, **SHARED)  # and this process, a third client
    try:
        assert {d.doc_id.split("/")[0] for d in reader.store.list_documents()} == {"runbooks", "policies"}
        assert endpoint_of(reader) == endpoint
    finally:
        reader.close()
    assert host_client.stop((data / "milvus.db").absolute()) is not None
    wait_gone(endpoint.server_pid)


@pytest.fixture
def shared_wb(tmp_path: Path, local_embedder):
    wb = make_workbench(tmp_path / "data", embedder=local_embedder, **SHARED)
    yield wb
    wb.close()


def endpoint_of(wb) -> object:
    endpoint = read_endpoint(HostFiles(Path(wb.store.uri).absolute()))
    assert endpoint is not None
    return endpoint


def many_files(n: int) -> list[tuple[str, bytes]]:
    return [(f"note-{i:03d}.md", f"# Note {i}\n\nA short note number {i} about disk space.\n".encode())
            for i in range(n)]


def killing_insert(monkeypatch, store, kill) -> None:
    """The first chunk insert of the run succeeds, then `kill()` takes the store's server away."""
    calls = {"n": 0}

    def insert(real, collection, rows, **kwargs):
        result = real(collection, rows, **kwargs)
        if collection == store.collection:
            calls["n"] += 1
            if calls["n"] == 1:
                kill()
        return result

    monkeypatch.setattr(store, "client", FailingClient(store.client, "insert", insert))


def check_stopped_at_first_failure(reports, caplog) -> None:
    failed = [r for r in reports if r.status == "failed"]
    assert len(failed) == len(reports) == 500
    assert "lost during a write" in failed[0].error and "run the command again" in failed[0].error
    assert sum("lost during a write" in r.error for r in reports) == 1  # one message, not one per file
    assert {r.error.split(":")[0] for r in failed[1:]} <= {"not written", "not attempted"}
    assert any(r.error.startswith("not attempted") for r in failed)
    assert failed[0].error_code == "store_unavailable" and {r.error_code for r in failed[1:]} == {"not_attempted"}
    assert "unexpected" not in " ".join(r.error for r in reports) and "Traceback" not in caplog.text


def test_host_killed_mid_ingest_stops_the_run_once_and_the_next_command_works(shared_wb, monkeypatch,
                                                                                caplog) -> None:
    shared_wb.ingestor.ingest_uploads([("kept.md", b"# Kept\n\nThe previous version survives.\n")])
    before = endpoint_of(shared_wb)

    def kill_host() -> None:
        os.kill(before.host_pid, signal.SIGKILL)
        wait_gone(before.server_pid)  # Lite exits once its lock holder is gone

    killing_insert(monkeypatch, shared_wb.store, kill_host)
    monkeypatch.setattr(shared_wb.ingestor, "group_chunks", 40)  # embed less before the failure
    check_stopped_at_first_failure(shared_wb.ingestor.ingest_uploads(many_files(500)), caplog)
    monkeypatch.undo()
    # The same workbench goes on with a new host; the documents committed before are all there.
    assert [d.doc_id for d in shared_wb.store.list_documents()] == ["kept.md"]
    after = endpoint_of(shared_wb)
    assert after.host_pid != before.host_pid and after.alive()
    assert shared_wb.ingestor.ingest_uploads(many_files(3))[0].status == "added"
    assert shared_wb.retriever.lookup("short note about disk space").evidence


def test_lite_child_dying_in_exclusive_mode_stops_the_run_once(tmp_path: Path, local_embedder, monkeypatch,
                                                               caplog) -> None:
    wb = make_workbench(tmp_path / "data", embedder=local_embedder)
    try:
        from rag_core.store.lite import server as own_server

        server, _ = own_server._servers[str((tmp_path / "data" / "milvus.db").resolve())]

        def kill_lite() -> None:
            os.kill(server.pid, signal.SIGKILL)
            wait_gone(server.pid)

        killing_insert(monkeypatch, wb.store, kill_lite)
        monkeypatch.setattr(wb.ingestor, "group_chunks", 40)
        check_stopped_at_first_failure(wb.ingestor.ingest_uploads(many_files(500)), caplog)
        monkeypatch.undo()
        assert wb.store.list_documents() == []  # nothing committed, and the store answers again
        assert wb.ingestor.ingest_uploads(many_files(1))[0].status == "added"
    finally:
        wb.close()


WRITER = """
import sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from tests.helpers import make_workbench
from tests.store.clients import FailingClient

wb = make_workbench(Path({data!r}), **{{"milvus.lite-mode": "shared", "milvus.host-idle": 30}})
def insert_then_hang(insert, collection, rows, **kwargs):
    result = insert(collection, rows, **kwargs)
    if collection == wb.store.collection:
        print("pending", flush=True)
        time.sleep(600)  # a live writer in the middle of its write
    return result
wb.store.client = FailingClient(wb.store.client, "insert", insert_then_hang)
wb.ingestor.ingest_uploads([("doc.md", b"# New\\n\\nThe new version, being written.\\n")])
"""


def test_recovery_spares_a_live_writer_and_cleans_a_killed_one_at_once(shared_wb) -> None:
    shared_wb.ingestor.ingest_uploads([("doc.md", b"# Old\n\nThe old version.\n")])
    [old] = shared_wb.store.list_documents()
    data = Path(shared_wb.store.uri).parent
    writer = subprocess.Popen([sys.executable, "-c", WRITER.format(repo=str(REPO), data=str(data))], cwd=REPO,
                              env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "pending", writer.stderr.read()[-2000:]

        def versions() -> set[str]:
            rows = shared_wb.store.client.query(shared_wb.store.collection, filter='doc_id == "doc.md"',
                                                output_fields=["version"], limit=100)
            return {r["version"] for r in rows}

        assert len(versions()) == 2
        kept = data / "originals" / "biz"
        [new] = versions() - {old.version}
        # Its kept original and sidecar are written before its chunks (store.originals.files): on disk already.
        assert {p.name for p in kept.iterdir()} == {old.version, f"{old.version}.json", new, f"{new}.pending.json"}
        assert shared_wb.store.recover() == 0  # another process is writing right now: its rows stay
        assert len(versions()) == 2 and shared_wb.store.list_documents() == [old]
        assert (kept / new).exists() and (kept / f"{new}.pending.json").exists()  # and its files
    finally:
        writer.kill()  # SIGKILL
        writer.wait()
    assert shared_wb.store.recover() == 1  # its writer is dead: cleaned at once, not after 6 hours
    assert versions() == {old.version}
    assert shared_wb.store.list_documents() == [old]
    # Its files too (#21 item 6): they waited 6 hours in shared mode, as if the writer might still run.
    assert {p.name for p in kept.iterdir()} == {old.version, f"{old.version}.json"}
    assert shared_wb.ingestor.original("doc.md") == b"# Old\n\nThe old version.\n"


def test_idle_host_stops_and_the_next_client_starts_another(tmp_path: Path, local_embedder) -> None:
    data = tmp_path / "data"
    wb = make_workbench(data, embedder=local_embedder, **{**SHARED, "milvus.host-idle": 1})
    first = endpoint_of(wb)
    time.sleep(2)
    assert first.alive()  # a client is connected: no idle stop
    wb.close()
    wait_gone(first.host_pid, timeout=30)
    wait_gone(first.server_pid, timeout=30)
    assert read_endpoint(HostFiles((data / "milvus.db").absolute())) is None
    # The file is free again: a process may open it alone, then share it again.
    alone = make_workbench(data, embedder=local_embedder)
    alone.close()
    wb = make_workbench(data, embedder=local_embedder, **SHARED)
    try:
        assert endpoint_of(wb).host_pid != first.host_pid
    finally:
        wb.close()


def processes_serving(db: Path) -> list[int]:
    """Every running process whose command line names `db`: a store host, a Milvus Lite server."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(db).encode() in (proc / "cmdline").read_bytes() and ProcessId(
                    int(proc.name), 0).alive():
                pids.append(int(proc.name))
        except OSError:
            continue  # gone meanwhile
    return pids


@pytest.mark.parametrize("deleted", ["the data dir", "the database file"])
def test_a_host_whose_database_is_deleted_exits_within_seconds(tmp_path: Path, local_embedder, deleted) -> None:
    """A test's or a script's temporary data dir, deleted after use, left its idle host (and Lite) running for
    milvus.host-idle; now both go at the host's next poll, clients or not."""
    data = tmp_path / "data"
    wb = make_workbench(data, embedder=local_embedder, **SHARED)  # a host that would idle 30 s
    endpoint = endpoint_of(wb)
    if deleted == "the data dir":
        wb.close()
        shutil.rmtree(data)
    else:  # while a client is still attached
        (data / "milvus.db").unlink()
    try:
        wait_gone(endpoint.host_pid, timeout=30)
        wait_gone(endpoint.server_pid, timeout=30)
    finally:
        wb.close()
    assert processes_serving(data / "milvus.db") == []


def test_a_command_asking_for_no_lingering_host_leaves_no_process(tmp_path: Path) -> None:
    """milvus.host-idle = 0 (RAG_MILVUS_HOST_IDLE=0, what the test suite sets): the host goes when the command's
    last store closes, and the command returns once it (and its Milvus Lite server) are gone."""
    data = tmp_path / "data"
    out = subprocess.run([sys.executable, "-m", "rag_core", "--data-dir", str(data), "ingest",
                          str(SAMPLE_KB / "runbooks" / "disk_full.md"), "--quiet", "--json"], cwd=REPO,
                         env=cli_env(RAG_MILVUS_HOST_IDLE="0"), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert {r["status"] for r in json.loads(out.stdout)} == {"added"}
    assert processes_serving((data / "milvus.db").absolute()) == []  # at once, no waiting
    log = HostFiles((data / "milvus.db").absolute()).log.read_text()
    assert "stops when its last client leaves" in log and "stopping: its last client left" in log  # it did run
    assert read_endpoint(HostFiles((data / "milvus.db").absolute())) is None


def test_no_lingering_leaves_a_host_others_started_running(tmp_path: Path, local_embedder, monkeypatch) -> None:
    """A client asking for no lingering host, on a host another process started with an idle time (the app's):
    it neither stops that host nor waits for it to stop."""
    waits: list[object] = []  # each wait of a leaving client for its host to stop (up to STOP_WAIT_S)
    wait = host_client.Attachment._wait_for_the_host
    monkeypatch.setattr(host_client.Attachment, "_wait_for_the_host", lambda self: (waits.append(self), wait(self))[1])
    data = tmp_path / "data"
    wb = make_workbench(data, embedder=local_embedder, **SHARED)
    running = endpoint_of(wb)
    wb.close()  # the host idles 30 s now, without clients
    quick = make_workbench(data, embedder=local_embedder, **{**SHARED, "milvus.host-idle": 0})
    try:
        assert endpoint_of(quick) == running
    finally:
        quick.close()
    assert waits == [] and running.alive()
    assert host_client.stop((data / "milvus.db").absolute()) is not None


def test_status_stop_and_lock_messages(shared_wb, capsys) -> None:
    data = str(Path(shared_wb.store.uri).parent)
    endpoint = endpoint_of(shared_wb)
    assert main(["--data-dir", data, "--set", "milvus.lite-mode=shared", "host", "status"]) == 0
    out = capsys.readouterr().out
    assert f"store host pid {endpoint.host_pid}" in out and f"pid {os.getpid()} (" in out  # this client
    # A process asking for the file alone is told who serves it and what to do.
    with pytest.raises(StoreLockedError, match=rf"already open in pid {endpoint.host_pid} \(store host\), which serves "
                                               r"it to every workbench process.*host stop"):
        make_workbench(Path(data), embedder=shared_wb.embedder)
    assert main(["--data-dir", data, "host", "stop"]) == 0
    assert f"stopped store host pid {endpoint.host_pid}" in capsys.readouterr().out
    wait_gone(endpoint.host_pid)
    assert main(["--data-dir", data, "host", "status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["running"] is False
    # The client still works: it starts a new host on its next request.
    assert shared_wb.store.list_documents() == []
    assert endpoint_of(shared_wb).host_pid != endpoint.host_pid


def test_an_exclusive_holder_is_named_without_its_arguments(tmp_path: Path, local_embedder) -> None:
    data = tmp_path / "data"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; sys.path.insert(0, sys.argv[1]); from pathlib import Path; "
         "from tests.helpers import make_workbench; make_workbench(Path(sys.argv[2])); print('ready', flush=True); "
         "time.sleep(600)", str(REPO), str(data), "--set", "chat.base-url=http://user:s3cret@example.invalid/v1"],
        cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        owner = lite_lock.owner_file(data / "milvus.db")
        assert owner.read_text() == f"pid {holder.pid} (python)" and owner.stat().st_mode & 0o777 == 0o600
        with pytest.raises(StoreLockedError) as err:  # shared mode: the host cannot start, and says why
            make_workbench(data, embedder=local_embedder, **SHARED)
        message = str(err.value)
        assert f"already open in pid {holder.pid} (python), which opened it for itself" in message
        assert "s3cret" not in message and "chat.base-url" not in message
    finally:
        holder.kill()
        holder.wait()


def test_a_process_serving_a_file_alone_serves_its_own_shared_stores_too(tmp_path: Path, local_embedder) -> None:
    data = tmp_path / "data"
    alone = make_workbench(data, embedder=local_embedder)
    shared = make_workbench(data, embedder=local_embedder, **SHARED)  # no host: this process has the file
    try:
        alone.ingestor.ingest_uploads([("one.md", b"# One\n\nThe first note.\n")])
        assert [d.doc_id for d in shared.store.list_documents()] == ["one.md"]
        assert read_endpoint(HostFiles((data / "milvus.db").absolute())) is None
    finally:
        shared.close()
        alone.close()
