"""Is a `.db` file a Milvus Lite database, and is it whole? Checked before Milvus Lite opens it.

A Milvus Lite 2.5 database is an SQLite file holding Lite's `collection_meta` table (and one table per
collection). Lite opens any SQLite file and adds its tables to it, so a file that is SQLite but not
Lite is refused here, untouched. A truncated file is recognised from SQLite's own header (the page
count times the page size is longer than the file) without reading the rest; deeper damage shows up as
SQLite's "malformed" / "not a database" errors when Lite fails to start (see `diagnose`).
Reads only, through SQLite's read-only mode: this module never changes the file.
"""

from __future__ import annotations

import shlex
import sqlite3
from pathlib import Path

from ...errors import StoreError

SQLITE_MAGIC = b"SQLite format 3\x00"
LITE_TABLE = "collection_meta"
# SQLite result codes (Python 3.11+ exposes them as `sqlite_errorcode`): the file is damaged.
_DAMAGED_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB


class NotALiteDatabase(StoreError):
    """The file is some other file (another program's SQLite database, or not SQLite at all)."""


class DamagedDatabase(StoreError):
    """The file was a Milvus Lite database but is truncated or corrupt."""


def _damaged(db: Path, what: str, collection: str = "biz") -> DamagedDatabase:
    data_dir = db.absolute().parent
    rebuilt = Path(f"{data_dir}-rebuilt")
    kept = [data_dir / "originals" / collection, data_dir / "uploads" / collection]  # with sidecars; older layout
    if any(folder.is_dir() for folder in kept):
        # Each kept original's sidecar names its document, so the originals are enough without the database.
        command = shlex.join(["python", "-m", "rag_core", "--data-dir", str(rebuilt), "rebuild", "--from",
                              str(data_dir), "--collection", collection])
        rebuild = (f"Rebuild it from its kept originals into a fresh data dir: `{command}` (the same document ids; "
                   f"it reports every document it restores or cannot), then use that data dir "
                   f"(RAG_DATA_DIR={shlex.quote(str(rebuilt))}).")
    else:
        command = shlex.join(["python", "-m", "rag_core", "--data-dir", str(rebuilt), "ingest"])
        rebuild = (f"No kept originals are in {kept[0]}: rebuild it from your source folders into a fresh data dir "
                   f"(`{command} FOLDER`), then use that data dir (RAG_DATA_DIR={shlex.quote(str(rebuilt))}).")
    return DamagedDatabase(f"The knowledge base {db} is damaged ({what}); Milvus Lite cannot open it. Nothing was "
                           f"changed. {rebuild}")


def check(db: Path, collection: str = "biz") -> None:
    """Raise NotALiteDatabase or DamagedDatabase, or return when Milvus Lite may open `db` (also when it
    does not exist yet or is empty: Lite creates it)."""
    try:
        size = db.stat().st_size
        with db.open("rb") as fh:
            header = fh.read(100)
    except FileNotFoundError:
        return
    except IsADirectoryError:
        raise NotALiteDatabase(f"milvus.uri {db} is a folder; it must name a .db file.") from None
    except OSError as exc:
        raise StoreError(f"Cannot read {db}: {exc.strerror}.") from None
    if size == 0:
        return
    if not header.startswith(SQLITE_MAGIC):
        if header.strip(b"\x00"):
            raise NotALiteDatabase(
                f"{db} is not a Milvus Lite database (not even an SQLite file: another program's file, or a database "
                "damaged from its first byte); refusing to open it so it is not overwritten. Point milvus.uri at "
                "a new .db path, or leave it empty for <data-dir>/milvus.db.")
        raise _damaged(db, "its first bytes are zeros", collection)
    if len(header) < 100:
        raise _damaged(db, f"only {size} bytes long", collection)
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    # The page count in the header is valid when the "version-valid-for" number matches the change counter.
    if header[92:96] == header[24:28] and pages and size < pages * page_size:
        raise _damaged(db, f"truncated: {size} bytes of {pages * page_size}", collection)
    try:
        tables = _tables(db)
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", 0) & 0xFF in _DAMAGED_CODES:
            raise _damaged(db, "SQLite reports it malformed", collection) from None
        return  # e.g. locked or a journal to roll back: Lite itself will open it or say why
    if tables and LITE_TABLE not in tables:
        raise NotALiteDatabase(
            f"{db} is an SQLite database of another program (tables: {', '.join(sorted(tables)[:5])}), not a "
            "Milvus Lite database; refusing to open it, since Milvus Lite would add its tables to it. Point "
            "milvus.uri at a new .db path, or leave it empty for <data-dir>/milvus.db.")


def diagnose(db: Path, collection: str = "biz") -> StoreError | None:
    """After Milvus Lite failed to open `db`: the reason when the file is to blame, else None.
    Runs SQLite's quick check, which reads the whole file (only on this failure path)."""
    try:
        check(db, collection)
        connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            result = connection.execute("PRAGMA quick_check(1)").fetchone()
        finally:
            connection.close()
    except StoreError as exc:
        return exc
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", 0) & 0xFF in _DAMAGED_CODES:
            return _damaged(db, "SQLite reports it malformed", collection)
        return None
    if result and result[0] != "ok":
        return _damaged(db, f"SQLite's check: {' '.join(str(result[0]).split())[:120]}", collection)
    return None


def _tables(db: Path) -> set[str]:
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        connection.close()
