"""The lock around a read-modify-write of the files kept beside the index (rag_core.files.FileLock): held across
processes and threads, re-entrant in the thread that holds it, released when its holder dies, and tried without
waiting by recovery."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from rag_core.files import FileLock

HOLDER = """
import sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})
from rag_core.files import FileLock
with FileLock(Path({path!r}))():
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_another_process_waits_and_a_try_does_not(tmp_path: Path) -> None:
    path = tmp_path / ".kb.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER.format(repo=str(Path(__file__).parents[1]),
                                                                   path=str(path))],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with FileLock(path)(wait=False) as got:
            assert got is False
        order: list[str] = []

        def take() -> None:
            with FileLock(path)():
                order.append("taken")

        waiter = threading.Thread(target=take)
        waiter.start()
        waiter.join(timeout=0.5)
        assert order == []  # still waiting for the other process
        order.append("released")
        holder.kill()  # a killed holder releases it
        holder.wait()
        waiter.join(timeout=60)
        assert order == ["released", "taken"]
    finally:
        if holder.poll() is None:
            holder.kill()


def test_re_entrant_in_its_thread_and_shared_by_every_lock_on_the_path_in_this_process(tmp_path: Path) -> None:
    a, b = FileLock(tmp_path / ".x.lock"), FileLock(tmp_path / ".x.lock")
    with a():
        with b() as again:  # the same path in the same thread: taken again, not a deadlock
            assert again
        seen: list[bool] = []

        def try_it() -> None:
            with b(wait=False) as got:
                seen.append(got)

        other = threading.Thread(target=try_it)
        other.start()
        other.join(timeout=60)
        assert seen == [False]  # another thread of this process does not get it
    with b(wait=False) as free:
        assert free
    memory = FileLock(None)
    with memory(), memory():
        pass
