"""Opening and closing the Milvus client: Milvus Lite (a local `.db` file, behind our lock) or a server by URI.

Everything specific to Milvus Lite's process model lives here: the `.db` naming rule, our lock around
the file (see lite_lock), translating Lite's "Open local milvus failed" into a clear message, and
stopping the embedded server when the last user in this process closes it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ..errors import StoreError, StoreLockedError
from . import lite_lock


def is_lite(uri: str) -> bool:
    return "://" not in uri


def connect(uri: str, token: str, timeout: float) -> Any:
    from pymilvus import MilvusClient
    from pymilvus.exceptions import MilvusException

    # pymilvus logs every failed RPC with a traceback (and a harmless warning per iterator on Lite);
    # this store raises its own messages instead.
    logging.getLogger("pymilvus").setLevel(logging.CRITICAL)

    if is_lite(uri):
        path = Path(uri)
        if path.suffix != ".db":
            raise StoreError(f"milvus.uri {uri!r}: a Milvus Lite file must end in .db, "
                             "or use http://host:19530 for a server.")
        path.parent.mkdir(parents=True, exist_ok=True)
        lite_lock.acquire(path)
        try:
            return MilvusClient(str(path))
        except MilvusException as exc:
            lite_lock.release(path)
            if "Open local milvus failed" in str(exc):
                raise StoreLockedError(f"The knowledge base {path} is already open in another program "
                                       "(not this workbench). Close it, or use another data dir.") from None
            raise StoreError(f"Could not open Milvus Lite at {path}: {exc}") from None
    try:
        return MilvusClient(uri=uri, token=token, timeout=timeout)
    except MilvusException as exc:
        from ..config import redact_uri

        raise StoreError(f"Could not connect to Milvus at {redact_uri(uri)}: {exc.message}. "
                         "Check MILVUS_URI / MILVUS_TOKEN and that the server is running.") from None


def close(client: Any, uri: str) -> None:
    client.close()
    if is_lite(uri) and lite_lock.release(Path(uri)):
        # Stop the embedded server too, so another process can open the file after us.
        from milvus_lite.server_manager import server_manager_instance

        server_manager_instance.release_server(uri)
