"""The KeptOriginals contract on every adapter: the stores (their active versions), and a folder of kept
originals read without its database, in both layouts (what `rebuild --from` reads)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from rag_core.records import NewVersion
from rag_core.store import MilvusStore
from rag_core.store.memory import InMemoryChunkStore
from rag_core.store.milvus.writes import kept_of_new
from rag_core.store.originals.files import OriginalFiles
from rag_core.store.originals.folder import KeptOriginalsFolder, read_folder, read_legacy_folder
from tests.contracts.kept_originals import FILES, WITHOUT_BYTES, KeptOriginalsContract
from tests.contracts.store import DIM, EMBEDDER, new_version, text_of


def versions() -> list[NewVersion]:
    return [new_version(doc_id, data.decode(), original=data) for doc_id, data in FILES.items()] + [
        new_version(WITHOUT_BYTES, text_of("gone"))]  # indexed from text: no original kept


@pytest.fixture(scope="module")
def lite_store(tmp_path_factory, milvus) -> MilvusStore:
    folder = Path(tmp_path_factory.mktemp("kept"))
    store = MilvusStore(str(folder / "milvus.db"), "kept", originals=folder / "originals")
    store.open(EMBEDDER, DIM)
    store.replace_documents(versions())
    yield store
    store.close()


class TestMilvusLite(KeptOriginalsContract):
    @pytest.fixture
    def source(self, lite_store: MilvusStore) -> MilvusStore:
        return lite_store


@pytest.fixture(scope="module")
def memory_store() -> InMemoryChunkStore:
    store = InMemoryChunkStore()
    store.open(EMBEDDER, DIM)
    store.replace_documents(versions())
    return store


class TestInMemory(KeptOriginalsContract):
    @pytest.fixture
    def source(self, memory_store: InMemoryChunkStore) -> InMemoryChunkStore:
        return memory_store


class TestFolderOfVersions(KeptOriginalsContract):
    """The Lite store's originals folder, read without its database; `gone.md` has a sidecar whose
    original was lost."""

    @pytest.fixture
    def source(self, lite_store: MilvusStore, tmp_path: Path) -> KeptOriginalsFolder:
        files = OriginalFiles(lite_store.originals.root)
        gone = new_version(WITHOUT_BYTES, text_of("gone"), original=b"soon lost")
        files.write("00000000000000aa", b"soon lost", dataclasses.replace(
            kept_of_new(gone, "00000000000000aa", "2026-01-01T00:00:00+00:00", 1), state="committed"))
        files.path("00000000000000aa").unlink()
        try:
            yield read_folder(files.root)
        finally:
            files.remove(["00000000000000aa"])


OLDER_LAYOUT = {doc_id: data for doc_id, data in FILES.items() if doc_id != "a.md"}


@pytest.fixture(scope="module")
def uploads_folder(tmp_path_factory) -> Path:
    root = Path(tmp_path_factory.mktemp("uploads")) / "biz"
    for doc_id, data in OLDER_LAYOUT.items():
        (root / doc_id).parent.mkdir(parents=True, exist_ok=True)
        (root / doc_id).write_bytes(data)
    return root


class TestFolderOfTheOlderLayout(KeptOriginalsContract):
    # Named by doc_id, the older layout could not keep both a.md and a.md/inside.md (#10 item 2).
    FILES = OLDER_LAYOUT
    LISTS_WITHOUT_BYTES = False

    @pytest.fixture
    def source(self, uploads_folder: Path) -> KeptOriginalsFolder:
        return read_legacy_folder(uploads_folder)
