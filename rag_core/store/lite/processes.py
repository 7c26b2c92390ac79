"""Who a process is, in a form another process can check later: pid + start time, boot, machine.

A pid alone is not an identity (pids are reused), so a process is named by its pid and its start time
in clock ticks since boot (`/proc/<pid>/stat`, field 22), and a boot by the kernel's random boot id.
Used by the store host (is the host named in an endpoint file still running?), by recovery (is the
writer of a pending version still running?) and by the lock messages (which program holds the file?).
Program names only, never command lines: a command line can carry secrets.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path


@dataclass(frozen=True)
class ProcessId:
    pid: int
    start: int  # clock ticks after boot; 0 when unknown (no /proc)

    @classmethod
    def current(cls) -> ProcessId:
        return cls(os.getpid(), start_ticks(os.getpid()))

    def alive(self) -> bool:
        """True while this very process runs (a reused pid has another start time; a zombie, a process
        that exited but was not yet reaped by its parent, does not run)."""
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # exists, owned by someone else
        fields = _stat(self.pid)
        if not fields:
            return not Path("/proc/self").exists()  # gone meanwhile, or no /proc to ask (then: it runs)
        return fields[0] != "Z" and (self.start == 0 or int(fields[19]) == self.start)


def _stat(pid: int) -> list[str]:
    """Fields 3.. of /proc/<pid>/stat (state first), or [] without /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    # The command name (field 2) is in parentheses and may contain spaces: count after the last ")".
    return stat.rsplit(")", 1)[1].split()


def start_ticks(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[19]) if fields else 0


@cache
def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


@cache
def machine_id() -> str:
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            return Path(path).read_text().strip()[:32]
        except OSError:
            continue
    return ""


def program_name() -> str:
    """This program's name: `streamlit`, `rag_core`, `pytest`... (`python -m pkg` runs pkg/__main__.py)."""
    if not sys.argv or sys.argv[0] in ("", "-c", "-"):
        return "python"
    argv0 = Path(sys.argv[0])
    return (argv0.parent.name if argv0.name == "__main__.py" else argv0.name) or "python"


def program_of(pid: int) -> str:
    """The name of another running program (Linux): `streamlit`, `rag_core`, ... never its arguments."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\x00")
    except OSError:
        return "?"
    words = [a.decode(errors="replace") for a in argv[:3]]
    if len(words) >= 3 and words[1] == "-m":  # python -m module: the module is the program
        return words[2].split(".")[0] if words[2].endswith(".__main__") else words[2]
    if len(words) >= 2 and words[1].endswith(".py"):
        return Path(words[1]).name
    return Path(words[0]).name if words and words[0] else "?"
