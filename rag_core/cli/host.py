"""`python -m rag_core host [status|stop]`: see and stop the store host of the knowledge base."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

from ..config import Settings
from ..errors import RagError
from ..store import is_lite
from ..store.lite import host_client
from .output import print_json


def _db(settings: Settings) -> Path:
    uri = settings.milvus_uri
    if not is_lite(uri):
        raise RagError("milvus.uri names a Milvus server: there is no store host (it serves Milvus Lite files).")
    return Path(uri).absolute()


def cmd_host(args: argparse.Namespace, settings: Settings) -> int:
    db = _db(settings)
    if args.action == "stop":
        stopped = host_client.stop(db)
        if stopped is None:
            print(f"no store host is running for {db}")
            return 0
        print(f"stopped {stopped.describe()}")
        if stopped.clients:
            print("the clients above start a new host on their next request; stop them too to release the file",
                  file=sys.stderr)
        return 0
    running = host_client.status(db)
    if args.json:
        print_json({"db": str(db), "running": running is not None,
                    "host": asdict(running.endpoint) if running else None,
                    "clients": list(running.clients) if running else []})
    elif running is None:
        print(f"no store host is running for {db} (the first workbench process that needs it starts one)")
    else:
        print(f"{db}: {running.describe()}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("host", help="show or stop the store host that shares the Milvus Lite file",
                       description="In shared mode (milvus.lite-mode = shared, the default) one store host process "
                                   "serves the knowledge base's Milvus Lite file to the app, the API and CLI "
                                   "commands; it starts on first use and stops after milvus.host-idle seconds "
                                   "without clients.")
    p.add_argument("action", nargs="?", choices=("status", "stop"), default="status",
                   help="status (default): is it running, who is connected; stop: stop it now")
    p.add_argument("--json", action="store_true", help="status as JSON")
    p.set_defaults(func=cmd_host)
